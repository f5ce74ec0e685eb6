/**
 * The schema of a route's answer: a strict object, named `id` in the OpenAPI description (a
 * component of its own) and described there.
 */
import { z } from "zod";
import { apiSchemas } from "./api-schemas.ts";

export function answerSchema<Shape extends z.ZodRawShape>(
  id: string,
  description: string,
  shape: Shape,
) {
  return z.strictObject(shape).register(apiSchemas, { id, description });
}
