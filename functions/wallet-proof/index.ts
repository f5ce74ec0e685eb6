import { bootFunction } from "../_shared/boot.ts";
import { createWalletProofHandler } from "./handler.ts";

Deno.serve(bootFunction(createWalletProofHandler));
