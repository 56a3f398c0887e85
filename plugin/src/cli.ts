/**
 * `openclaw memory stats|export|consolidate|conflicts`, calling the MUMA service.
 *
 * The CLI is an operator surface, so the user is given explicitly (`--user`), falling back
 * to `defaultUserId`. Output goes to stdout; errors to stderr with exit code 1.
 */
import { writeFileSync } from "node:fs";
import { describeError } from "./client.js";
import type { Runtime } from "./runtime.js";
import type { CliCommand, CliContext, CliDescriptor } from "./types.js";

export const CLI_DESCRIPTORS: CliDescriptor[] = [
  { name: "memory", description: "MUMA memory: stats, export, consolidate, conflicts", hasSubcommands: true },
];

export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
  setExitCode: (code: number) => void;
}

const defaultIO: CliIO = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
  setExitCode: (code) => {
    process.exitCode = code;
  },
};

type Opts = { user?: string; agent?: string; json?: boolean; format?: string; out?: string };

function lastOpts(args: unknown[]): Opts {
  // commander passes (...positionals, options, command)
  for (let i = args.length - 1; i >= 0; i--) {
    const a = args[i] as { opts?: () => Opts } | Opts | undefined;
    if (a && typeof a === "object") {
      if (typeof (a as { opts?: unknown }).opts === "function") continue; // the Command itself
      return a as Opts;
    }
  }
  return {};
}

/** What every subcommand shares: the runtime, the output, the request budget and the user. */
interface CliKit {
  rt: Runtime;
  io: CliIO;
  timeoutMs: number;
  userOf: (opts: Opts) => string;
  /** Wrap a command body: its error goes to stderr and sets exit code 1. */
  run: (fn: (opts: Opts, args: unknown[]) => Promise<void>) => (...args: unknown[]) => Promise<void>;
}

export function registerMemoryCli(rt: Runtime, ctx: CliContext, io: CliIO = defaultIO): void {
  const kit: CliKit = {
    rt,
    io,
    timeoutMs: Math.max(rt.config.toolTimeoutMs, 30_000),
    userOf: (opts) => {
      const user = opts.user?.trim() || rt.config.defaultUserId;
      if (!user) throw new Error("no user: pass --user <id> (or set defaultUserId in the plugin config)");
      return user;
    },
    run: (fn) => async (...args) => {
      try {
        await fn(lastOpts(args), args);
      } catch (err) {
        io.err(`muma: ${describeError(err)}`);
        io.setExitCode(1);
      }
    },
  };

  const memory: CliCommand = ctx.program.command("memory").description("MUMA long-term memory (service at " + rt.config.serviceUrl + ")");
  addStats(memory, kit);
  addExport(memory, kit);
  addConsolidate(memory, kit);
  addConflicts(memory, kit);
}

function addStats(memory: CliCommand, { rt, io, timeoutMs, userOf, run }: CliKit): void {
  memory
    .command("stats")
    .description("Show memory counts for a user")
    .option("--user <id>", "user id (default: defaultUserId)")
    .option("--agent <id>", "agent id (default: main; agent tokens must name one)")
    .option("--json", "print JSON")
    .action(
      run(async (opts) => {
        const res = await rt.client.stats(userOf(opts), opts.agent || "main", { timeoutMs });
        if (opts.json) io.out(JSON.stringify(res, null, 2));
        else io.out(Object.entries(res ?? {}).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`).join("\n") || "(no stats)");
      }),
    );
}

function addExport(memory: CliCommand, { rt, io, timeoutMs, userOf, run }: CliKit): void {
  memory
    .command("export")
    .description("Export a user's memories (JSONL)")
    .option("--user <id>", "user id (default: defaultUserId)")
    .option("--agent <id>", "agent id (default: main; agent tokens must name one)")
    .option("--format <format>", "export format", "jsonl")
    .option("--out <file>", "write to a file instead of stdout")
    .action(
      run(async (opts) => {
        const body = await rt.client.exportUser(userOf(opts), opts.agent || "main", opts.format ?? "jsonl", { timeoutMs });
        if (opts.out) {
          writeFileSync(opts.out, body);
          io.err(`muma: wrote ${body.length} bytes to ${opts.out}`);
        } else io.out(body);
      }),
    );
}

function addConsolidate(memory: CliCommand, { rt, io, timeoutMs, userOf, run }: CliKit): void {
  memory
    .command("consolidate")
    .description("Run consolidation (sleep cycle) for a user now")
    .option("--user <id>", "user id (default: defaultUserId)")
    .option("--json", "print JSON")
    .action(
      run(async (opts) => {
        const res = await rt.client.consolidate(userOf(opts), { timeoutMs });
        io.out(opts.json ? JSON.stringify(res ?? {}, null, 2) : "consolidation queued");
      }),
    );
}

function addConflicts(memory: CliCommand, { rt, io, timeoutMs, userOf, run }: CliKit): void {
  memory
    .command("conflicts")
    .description("List detected memory conflicts for a user")
    .option("--user <id>", "user id (default: defaultUserId)")
    .option("--agent <id>", "agent id (default: main; agent tokens must name one)")
    .option("--json", "print JSON")
    .action(
      run(async (opts) => {
        const res = (await rt.client.conflicts(userOf(opts), opts.agent || "main", { timeoutMs })) as unknown;
        if (opts.json) {
          io.out(JSON.stringify(res, null, 2));
          return;
        }
        const list = Array.isArray(res) ? res : Array.isArray((res as { conflicts?: unknown })?.conflicts) ? (res as { conflicts: unknown[] }).conflicts : [];
        if (list.length === 0) {
          io.out("no conflicts");
          return;
        }
        for (const c of list as Array<Record<string, unknown>>) io.out(formatConflict(c));
      }),
    );
}

/** `id  status  class  sim x` then the two notes' contents. */
function formatConflict(c: Record<string, unknown>): string {
  const parts = [c.id, c.status, c.classification, c.similarity !== undefined ? `sim ${String(c.similarity)}` : undefined]
    .filter((v) => v !== undefined && v !== null)
    .map(String);
  return `${parts.join("  ")}\n  A: ${String(c.note_a_content ?? c.note_a ?? c.a ?? "")}\n  B: ${String(c.note_b_content ?? c.note_b ?? c.b ?? "")}`;
}
