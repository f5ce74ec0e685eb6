/**
 * Provider keys by their documented shapes: a prefix of the provider's (`sk-ant-`, `AKIA`, `hf_`,
 * …) and a body in its alphabet, found wherever they are written.
 */
import type { Report } from "./finding.ts";
import { isPlaceholder, looksRandom } from "./values.ts";

interface ShapeRule {
  readonly kind: string;
  /** Texts a match starts with: a line holding none is not searched (most lines hold none). */
  readonly hints: readonly string[];
  /** Group 1: the provider's prefix; what follows it in the match is the random body. */
  readonly pattern: RegExp;
  /** The body must look random (looksRandom): a key's does, a word's or a name's does not. */
  readonly random: boolean;
}

// Each pattern: not glued to a preceding letter or digit, and (for open-ended lengths) greedy to
// the end of the token. Prefixes are the providers' documented ones, bodies their alphabets (and
// no narrower: Hugging Face's are letters only, a Google key may have no digit).
const SHAPES: readonly ShapeRule[] = [
  shape("Anthropic-style key (sk-ant-…)", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
  shape("OpenAI-style key (sk-…)", "sk-(?!ant-)", "[A-Za-z0-9_-]{20,}", { hints: ["sk-"] }),
  shape("Stripe-style key (sk_live_…)", "[rs]k_(?:live|test)_", "[A-Za-z0-9]{20,}", {
    hints: ["k_live_", "k_test_"],
  }),
  shape("AWS access key id (AKIA…)", "AKIA|ASIA", "[A-Z0-9]{16}(?![A-Za-z0-9])", {
    hints: ["AKIA", "ASIA"],
    random: false,
  }),
  shape("GitHub token (ghp_…)", "gh[pousr]_", "[A-Za-z0-9]{36,}", {
    hints: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
  }),
  shape("GitHub token (github_pat_…)", "github_pat_", "[A-Za-z0-9_]{40,}"),
  shape("Slack token (xox…)", "xox[abposr]-", "[A-Za-z0-9-]{10,}", { hints: ["xox"] }),
  shape(
    "Slack webhook URL",
    String.raw`https://hooks\.slack\.com/services/`,
    "T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{16,}",
    { hints: ["hooks.slack.com/services/"] },
  ),
  shape("Google API key (AIza…)", "AIza", "[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
  shape("Hugging Face token (hf_…)", "hf_", "[A-Za-z0-9]{30,}"),
  shape("Hugging Face organisation token (api_org_…)", "api_org_", "[A-Za-z0-9]{30,}"),
  shape("Replicate token (r8_…)", "r8_", "[A-Za-z0-9]{30,}"),
  shape("Groq key (gsk_…)", "gsk_", "[A-Za-z0-9]{40,}"),
  shape("xAI key (xai-…)", "xai-", "[A-Za-z0-9]{40,}"),
  shape("Perplexity key (pplx-…)", "pplx-", "[A-Za-z0-9]{40,}"),
  shape("npm token (npm_…)", "npm_", "[A-Za-z0-9]{36,}"),
  shape("GitLab token (glpat-…)", "glpat-", "[A-Za-z0-9_-]{20,}"),
  shape("Grafana token (glc_…, glsa_…)", "glc_|glsa_", "[A-Za-z0-9+/_]{32,}={0,2}", {
    hints: ["glc_", "glsa_"],
  }),
  shape("Linear key (lin_api_…)", "lin_api_", "[A-Za-z0-9_]{32,}"),
  shape("Notion token (ntn_…)", "ntn_", "[0-9]{11}[A-Za-z0-9]{35,}"),
  shape(
    "SendGrid key (SG.…)",
    String.raw`SG\.`,
    String.raw`[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`,
    { hints: ["SG."] },
  ),
  shape("Shopify token (shpat_…)", "shp(?:at|ca|pa|ss)_", "[A-Fa-f0-9]{32,}", {
    hints: ["shpat_", "shpca_", "shppa_", "shpss_"],
  }),
  shape("HashiCorp Vault token (hvs.…)", String.raw`hv[sbr]\.`, "[A-Za-z0-9_-]{90,}", {
    hints: ["hvs.", "hvb.", "hvr."],
  }),
  shape("Vercel token (vcp_…)", "vc[pciark]_", "[A-Za-z0-9]{20,}", {
    hints: ["vcp_", "vci_", "vca_", "vcr_", "vck_"],
  }),
  shape("Databricks token (dapi…)", "dapi", "[a-fA-F0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),
  shape("Figma token (figd_…)", "figd_", "[A-Za-z0-9_-]{40,}"),
  shape("Tailscale key (tskey-…)", "tskey-[a-z]+-", "[A-Za-z0-9_]{8,}-[A-Za-z0-9_]{16,}", {
    hints: ["tskey-"],
  }),
  shape("Docker token (dckr_pat_…)", "dckr_pat_", "[A-Za-z0-9_-]{27,}"),
  shape(
    "Cloudflare token (cfut_…)",
    "cfk_|cfut_|cfat_",
    "[A-Za-z0-9]{40}[0-9a-f]{8}(?![A-Za-z0-9])",
    { hints: ["cfk_", "cfut_", "cfat_"] },
  ),
  shape("1Password service account token (ops_…)", "ops_", "eyJ[A-Za-z0-9+/=]{100,}"),
  shape("private key block", "-----BEGIN ", "(?:[A-Z]+ )*PRIVATE KEY-----", { random: false }),
];

/**
 * `prefix` is a regular expression, a literal unless `hints` lists the literal texts it can start
 * with; `random`: whether the body must look random (looksRandom).
 */
function shape(
  kind: string,
  prefix: string,
  body: string,
  options: { hints?: readonly string[]; random?: boolean } = {},
): ShapeRule {
  const pattern = new RegExp(`(?<![A-Za-z0-9])(${prefix})${body}`, "g");
  return { kind, hints: options.hints ?? [prefix], pattern, random: options.random ?? true };
}

/** Every provider-shaped key in `text` whose body looks random where its rule asks for it. */
export function findShapes(text: string, report: Report): void {
  for (const rule of SHAPES) {
    if (!rule.hints.some((hint) => text.includes(hint))) continue;
    for (const match of text.matchAll(rule.pattern)) {
      const value = match[0];
      if (rule.random && !looksRandom(value.slice(match[1].length))) continue;
      if (isPlaceholder(value.replace(/^-----BEGIN/, ""))) continue;
      report(match.index, match.index + value.length, value, rule.kind);
    }
  }
}
