import { bootFunction } from "../_shared/boot.ts";
import { createUserSecretsHandler } from "./handler.ts";

Deno.serve(bootFunction(createUserSecretsHandler));
