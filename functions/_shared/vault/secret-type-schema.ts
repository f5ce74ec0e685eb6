/**
 * The secret type as a zod schema: request bodies validate with it, and answers and errors are
 * described by it (one `SecretType` in the OpenAPI description). Kept apart from
 * protocol/secret-types.ts, which the client package ships and which must not pull in zod.
 */
import { z } from "zod";
import { SECRET_TYPES } from "../../../protocol/secret-types.ts";

export const secretTypeSchema = z.enum(SECRET_TYPES);
