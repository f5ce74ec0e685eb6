// Type checks only (not bundled): the adapters are what the published kits' own types ask for.
// tests/wallet_kits_test.ts copies this file into the docs' React app's src/ (beside the page's
// vault.ts) for one `tsc -b`, then removes it.
import { createAuthenticationAdapter } from "@rainbow-me/rainbowkit";
import type { CreateAppKit } from "@reown/appkit";
import { createVaultSiwx } from "@wallet-vault/client/appkit-siwx";
import { vaultAuthenticationAdapter } from "@wallet-vault/client/rainbowkit";
import { vault } from "./vault";

type RainbowKitAdapter<Message> = Parameters<
  typeof createAuthenticationAdapter<Message>
>[0];
type AppKitSiwx = NonNullable<CreateAppKit["siwx"]>;

export const adapter: RainbowKitAdapter<string> = vaultAuthenticationAdapter(
  vault,
);
export const siwx: AppKitSiwx = createVaultSiwx(vault, { required: false });

// The checks have teeth: a wrong shape is refused (an `any` would let these through).
// @ts-expect-error RainbowKit's message here is the EIP-4361 text, not an object.
export const objectMessage: RainbowKitAdapter<{ raw: string }> =
  vaultAuthenticationAdapter(vault);
// @ts-expect-error The SIWX config is AppKit's, not RainbowKit's.
export const crossed: RainbowKitAdapter<string> = createVaultSiwx(vault);
