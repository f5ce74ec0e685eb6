import { bootFunction } from "../_shared/boot.ts";
import { createDeployedApiHandler } from "./handler.ts";

Deno.serve(bootFunction(createDeployedApiHandler));
