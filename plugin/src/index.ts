/**
 * MUMA memory plugin for OpenClaw: entry point.
 *
 * This module does not import `openclaw`: `definePluginEntry` from
 * `openclaw/plugin-sdk/plugin-entry` only returns a plain object of this shape, so the plugin
 * exports that object itself and installs with no runtime dependency at all.
 *
 * `register(api)` is synchronous and may run several times per process (full, discovery,
 * cli-metadata, ... modes). It only records registrations: no connection, timer or file
 * handle is opened here. MUMA is contacted lazily by hooks, tools and the CLI.
 */
import { registerMemoryCli, CLI_DESCRIPTORS } from "./cli.js";
import { manifestConfigSchema, resolveConfig } from "./config.js";
import { HOOK_NAMES, registerHooks } from "./hooks.js";
import { Runtime } from "./runtime.js";
import { TOOL_NAMES, registerTools } from "./tools.js";
import type { PluginApi, PluginEntry, PluginLogger } from "./types.js";

export const PLUGIN_ID = "muma";

export { HOOK_NAMES, TOOL_NAMES };

function safeLogger(api: PluginApi): PluginLogger {
  const base = api.logger ?? console;
  const wrap = (fn: ((m: string) => void) | undefined) => (message: string) => {
    try {
      fn?.call(base, message);
    } catch {
      /* never let logging throw */
    }
  };
  return { debug: wrap(base.debug ?? undefined), info: wrap(base.info), warn: wrap(base.warn), error: wrap(base.error) };
}

export function register(api: PluginApi): void {
  const logger = safeLogger(api);
  const rt = new Runtime(api.pluginConfig, logger);

  registerTools(rt, (factory, opts) => api.registerTool(factory, opts));

  registerHooks(rt, (name, handler, opts) => {
    if (opts) api.on(name, handler, opts);
    else api.on(name, handler);
  });

  if (typeof api.registerCli === "function") {
    api.registerCli((ctx) => registerMemoryCli(rt, ctx), { descriptors: CLI_DESCRIPTORS });
  }
}

const entry: PluginEntry = {
  id: PLUGIN_ID,
  name: "MUMA Memory",
  description:
    "Multi-user, multi-agent long-term memory backed by the MUMA service: auto-recall before each model call, auto-capture of turns, and memory_* tools.",
  kind: "memory",
  get configSchema() {
    return {
      jsonSchema: manifestConfigSchema(),
      safeParse(value: unknown) {
        const { config, problems } = resolveConfig(value);
        return problems.length
          ? { success: false as const, error: { issues: problems.map((message) => ({ path: [] as string[], message })) } }
          : { success: true as const, data: config };
      },
    };
  },
  register,
};

export default entry;
