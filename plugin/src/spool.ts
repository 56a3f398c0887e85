/**
 * A file spool for captured episodes the service has not acknowledged, so they survive the
 * process: `openclaw agent --local` exits right after its turn, and turns captured while
 * the service was down used to be lost with it.
 *
 * Files are `spool-<key>-<pid>.json` in the spool directory, where `<key>` names the
 * service, tenant and token (episodes only ever go back where they were meant to go).
 * Each process writes only its own file; a process claims every file of its key by
 * renaming it first, so two processes never both read one. Resending twice is safe: every
 * episode carries an idempotency key.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { EpisodeIn } from "./client.js";
import type { MumaConfig } from "./config.js";
import type { PluginLogger } from "./types.js";

/** OpenClaw's state directory (`OPENCLAW_STATE_DIR`, else ~/.openclaw), then `muma-spool`. */
export function defaultSpoolDir(): string {
  const state = process.env.OPENCLAW_STATE_DIR?.trim() || join(homedir(), ".openclaw");
  return join(state, "muma-spool");
}

export class Spool {
  private readonly dir: string;
  private readonly prefix: string;
  private readonly own: string;
  private readonly logger: PluginLogger;

  constructor(dir: string, config: MumaConfig, logger: PluginLogger) {
    const key = createHash("sha256")
      .update(`${config.serviceUrl}|${config.tenantId ?? ""}|${config.token ?? ""}`)
      .digest("hex")
      .slice(0, 16);
    this.dir = dir;
    this.prefix = `spool-${key}-`;
    this.own = join(dir, `${this.prefix}${process.pid}.json`);
    this.logger = logger;
  }

  /** Every episode spooled for this service by any process (this one's included), oldest
   * file first; the files are gone once read. Never throws. */
  claim(): EpisodeIn[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => n.startsWith(this.prefix) && n.endsWith(".json"));
    } catch {
      return [];
    }
    const episodes: EpisodeIn[] = [];
    for (const name of names.sort()) {
      const claimed = join(this.dir, `${name}.claimed-${process.pid}`);
      try {
        renameSync(join(this.dir, name), claimed);
      } catch {
        continue; // another process claimed it first
      }
      try {
        const parsed: unknown = JSON.parse(readFileSync(claimed, "utf8"));
        if (Array.isArray(parsed)) episodes.push(...(parsed as EpisodeIn[]));
      } catch (err) {
        this.logger.warn(`[muma] capture spool ${name} is unreadable, skipped: ${String(err)}`);
      }
      rmSync(claimed, { force: true });
    }
    if (episodes.length) this.logger.info(`[muma] resending ${episodes.length} captured episode(s) kept from an earlier run`);
    return episodes;
  }

  /** This process's unsent episodes, written whole (an empty list removes the file). */
  save(episodes: EpisodeIn[]): void {
    try {
      if (episodes.length === 0) {
        rmSync(this.own, { force: true });
        return;
      }
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const partial = `${this.own}.partial`;
      writeFileSync(partial, JSON.stringify(episodes), { mode: 0o600 });
      renameSync(partial, this.own); // a crash mid-write never leaves half a spool
    } catch (err) {
      this.logger.warn(`[muma] could not write the capture spool in ${this.dir}: ${String(err)}`);
    }
  }
}
