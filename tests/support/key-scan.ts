/**
 * Provider tokens in their real formats, made at run time from crypto.getRandomValues: the
 * repository never holds a literal key-shaped value, and its own scan stays clean. Nothing here is
 * tuned to please the scanner: full alphabets, vowels and all, and no digit forced in.
 */
import type { Finding } from "../../key-scanner/finding.ts";
import { LineScanner } from "../../key-scanner/line-scanner.ts";

export const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const BASE62 = `0123456789${LETTERS}`;
export const BASE64URL = `${BASE62}-_`;
export const HEX = "0123456789abcdef";

/** `length` characters drawn uniformly from `alphabet` (rejection sampling: no modulo bias). */
export function randomFrom(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}

export interface TokenFamily {
  /** What the test calls it. */
  readonly name: string;
  /** The finding's kind the scanner gives it. */
  readonly kind: string;
  /** A fresh token of the family's documented format. */
  readonly make: () => string;
  /** The variable it usually sits under in an environment file. */
  readonly variable: string;
}

const OPENAI = "OpenAI-style key (sk-…)";

/** Every provider family the scanner claims by shape, in its documented format. */
export const TOKEN_FAMILIES: readonly TokenFamily[] = [
  {
    name: "Hugging Face user token",
    kind: "Hugging Face token (hf_…)",
    make: () => `hf_${randomFrom(LETTERS, 34)}`,
    variable: "HF_TOKEN",
  },
  {
    name: "Hugging Face organisation token",
    kind: "Hugging Face organisation token (api_org_…)",
    make: () => `api_org_${randomFrom(LETTERS, 34)}`,
    variable: "HUGGINGFACEHUB_API_TOKEN",
  },
  {
    name: "OpenAI legacy key",
    kind: OPENAI,
    make: () => `sk-${randomFrom(BASE62, 48)}`,
    variable: "OPENAI_API_KEY",
  },
  {
    name: "OpenAI legacy key with its marker",
    kind: OPENAI,
    make: () => `sk-${randomFrom(BASE62, 20)}T3BlbkFJ${randomFrom(BASE62, 20)}`,
    variable: "OPENAI_API_KEY",
  },
  {
    name: "OpenAI project key (short)",
    kind: OPENAI,
    make: () => `sk-proj-${randomFrom(BASE64URL, 48)}`,
    variable: "OPENAI_API_KEY",
  },
  {
    name: "OpenAI project key",
    kind: OPENAI,
    make: () => `sk-proj-${randomFrom(BASE64URL, 74)}T3BlbkFJ${randomFrom(BASE64URL, 74)}`,
    variable: "OPENAI_API_KEY",
  },
  {
    name: "Anthropic key",
    kind: "Anthropic-style key (sk-ant-…)",
    make: () => `sk-ant-api03-${randomFrom(BASE64URL, 93)}AA`,
    variable: "ANTHROPIC_API_KEY",
  },
  {
    name: "Google API key",
    kind: "Google API key (AIza…)",
    make: () => `AIza${randomFrom(BASE64URL, 35)}`,
    variable: "GOOGLE_API_KEY",
  },
  {
    name: "Replicate token",
    kind: "Replicate token (r8_…)",
    make: () => `r8_${randomFrom(BASE62, 37)}`,
    variable: "REPLICATE_API_TOKEN",
  },
  {
    name: "xAI key",
    kind: "xAI key (xai-…)",
    make: () => `xai-${randomFrom(BASE62, 80)}`,
    variable: "XAI_API_KEY",
  },
  {
    name: "Groq key",
    kind: "Groq key (gsk_…)",
    make: () => `gsk_${randomFrom(BASE62, 52)}`,
    variable: "GROQ_API_KEY",
  },
];

/**
 * Families secretlint's recommended preset knows by shape, in the formats its rules document, each
 * with the kind this scanner gives it.
 */
export const OTHER_FAMILIES: readonly TokenFamily[] = [
  {
    name: "npm token",
    kind: "npm token (npm_…)",
    make: () => `npm_${randomFrom(BASE62, 36)}`,
    variable: "NPM_TOKEN",
  },
  {
    name: "GitLab token",
    kind: "GitLab token (glpat-…)",
    make: () => `glpat-${randomFrom(BASE64URL, 20)}`,
    variable: "GITLAB_TOKEN",
  },
  {
    name: "Grafana Cloud token",
    kind: "Grafana token (glc_…, glsa_…)",
    make: () => `glc_${randomFrom(BASE62, 60)}==`,
    variable: "GRAFANA_TOKEN",
  },
  {
    name: "Grafana service account token",
    kind: "Grafana token (glc_…, glsa_…)",
    make: () => `glsa_${randomFrom(BASE62, 32)}_${randomFrom(HEX, 8)}`,
    variable: "GRAFANA_TOKEN",
  },
  {
    name: "Linear key",
    kind: "Linear key (lin_api_…)",
    make: () => `lin_api_${randomFrom(BASE62, 40)}`,
    variable: "LINEAR_API_KEY",
  },
  {
    name: "Notion token",
    kind: "Notion token (ntn_…)",
    make: () => `ntn_${randomFrom("0123456789", 11)}${randomFrom(BASE62, 35)}`,
    variable: "NOTION_TOKEN",
  },
  {
    name: "SendGrid key",
    kind: "SendGrid key (SG.…)",
    make: () => `SG.${randomFrom(BASE64URL, 22)}.${randomFrom(BASE64URL, 43)}`,
    variable: "SENDGRID_API_KEY",
  },
  {
    name: "Shopify token",
    kind: "Shopify token (shpat_…)",
    make: () => `shpat_${randomFrom(HEX, 32)}`,
    variable: "SHOPIFY_TOKEN",
  },
  {
    name: "Stripe key",
    kind: "Stripe-style key (sk_live_…)",
    make: () => `sk_live_${randomFrom(BASE62, 99)}`,
    variable: "STRIPE_SECRET_KEY",
  },
  {
    name: "GitHub token",
    kind: "GitHub token (ghp_…)",
    make: () => `ghp_${randomFrom(BASE62, 36)}`,
    variable: "GITHUB_TOKEN",
  },
  {
    name: "GitHub fine-grained token",
    kind: "GitHub token (github_pat_…)",
    make: () => `github_pat_${randomFrom(BASE62, 22)}_${randomFrom(BASE62, 59)}`,
    variable: "GITHUB_TOKEN",
  },
  {
    name: "Slack bot token",
    kind: "Slack token (xox…)",
    make: () =>
      `xoxb-${randomFrom("0123456789", 12)}-${randomFrom("0123456789", 13)}-${
        randomFrom(BASE62, 24)
      }`,
    variable: "SLACK_BOT_TOKEN",
  },
  {
    name: "Slack incoming webhook",
    kind: "Slack webhook URL",
    make: () =>
      `https://hooks.slack.com/services/T${randomFrom(BASE62, 10)}/B${randomFrom(BASE62, 10)}/${
        randomFrom(BASE62, 24)
      }`,
    variable: "SLACK_WEBHOOK",
  },
  {
    name: "AWS access key id",
    kind: "AWS access key id (AKIA…)",
    make: () => `AKIA${randomFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}`,
    variable: "AWS_ACCESS_KEY_ID",
  },
  {
    name: "HashiCorp Vault token",
    kind: "HashiCorp Vault token (hvs.…)",
    make: () => `hvs.${randomFrom(BASE64URL, 95)}`,
    variable: "VAULT_TOKEN",
  },
  {
    name: "Vercel token",
    kind: "Vercel token (vcp_…)",
    make: () => `vcp_${randomFrom(BASE62, 40)}`,
    variable: "VERCEL_TOKEN",
  },
  {
    name: "Databricks token",
    kind: "Databricks token (dapi…)",
    make: () => `dapi${randomFrom(HEX, 32)}`,
    variable: "DATABRICKS_TOKEN",
  },
  {
    name: "Figma token",
    kind: "Figma token (figd_…)",
    make: () => `figd_${randomFrom(BASE64URL, 40)}`,
    variable: "FIGMA_TOKEN",
  },
  {
    name: "Tailscale key",
    kind: "Tailscale key (tskey-…)",
    make: () => `tskey-auth-${randomFrom(BASE62, 12)}-${randomFrom(BASE62, 30)}`,
    variable: "TS_AUTHKEY",
  },
  {
    name: "Docker token",
    kind: "Docker token (dckr_pat_…)",
    make: () => `dckr_pat_${randomFrom(BASE64URL, 27)}`,
    variable: "DOCKER_TOKEN",
  },
  {
    name: "Cloudflare token",
    kind: "Cloudflare token (cfut_…)",
    make: () => `cfut_${randomFrom(BASE62, 40)}${randomFrom(HEX, 8)}`,
    variable: "CLOUDFLARE_API_TOKEN",
  },
];

// ---------------------------------------------------------------------------------------------
// Fixtures: files in a temporary directory, git repositories, and the scan command as the task
// runs it.

/** Every finding in one file's text, as the scanner reads a file. */
export function scanText(text: string, file: string): Finding[] {
  const scanner = new LineScanner(file);
  scanner.push(text);
  return scanner.end();
}

export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const DENO_JSON = `${ROOT}/deno.json`;

/** A temp directory with the given files (path → text); removed when disposed. */
export async function fixture(files: Record<string, string | Uint8Array>) {
  const dir = await Deno.makeTempDir({ prefix: "key-scan-" });
  for (const [path, content] of Object.entries(files)) {
    const full = `${dir}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(full, content);
    else await Deno.writeFile(full, content);
  }
  return {
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

/** `deno task scan` as the task runs it (its permissions), but in another directory. */
export async function runScanIn(cwd: string, args: string[] = []) {
  const task: string = JSON.parse(await Deno.readTextFile(DENO_JSON)).tasks.scan;
  const [, , ...rest] = task.split(/\s+/); // "deno run <permissions…> key-scanner/main.ts"
  const permissions = rest.filter((arg) => arg.startsWith("--"));
  return await scanOutput(
    ["run", "--config", DENO_JSON, ...permissions, `${ROOT}/key-scanner/main.ts`, ...args],
    cwd,
  );
}

/** Deno with `args` in `cwd`, colourless: its exit code and what it printed. */
export async function scanOutput(args: string[], cwd: string) {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** A git repository in a temp directory, with a quiet identity. */
export async function gitRepo(files: Record<string, string | Uint8Array> = {}) {
  const repo = await fixture(files);
  const git = async (...args: string[]) => {
    const output = await new Deno.Command("git", {
      args: ["-c", "user.email=scan@test", "-c", "user.name=scan", ...args],
      cwd: repo.dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout).trim();
    if (!output.success) {
      throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(output.stderr)}`);
    }
    return stdout;
  };
  await git("init", "-q", "-b", "main");
  return Object.assign(repo, { git });
}
