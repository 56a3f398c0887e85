// A recording stand-in for OpenClaw's plugin `api` (the SDK's own test helpers are not
// published). It records every registration and lets tests fire hooks and run tools the way
// OpenClaw would. It does not exercise the loader's gates (allowConversationAccess, schema
// validation): the end-to-end test covers those in a real OpenClaw.

export function createMockApi({ pluginConfig = {}, registrationMode = "full" } = {}) {
  const logs = [];
  const log = (level) => (message) => logs.push({ level, message: String(message) });
  const api = {
    id: "muma",
    registrationMode,
    pluginConfig,
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    tools: [], // { tool | factory, opts }
    hooks: [], // { name, handler, opts }
    clis: [], // { registrar, opts }
    logs,
    registerTool(toolOrFactory, opts) {
      api.tools.push({ toolOrFactory, opts });
    },
    on(name, handler, opts) {
      api.hooks.push({ name, handler, opts });
    },
    registerCli(registrar, opts) {
      api.clis.push({ registrar, opts });
    },
  };

  /** Fire a hook like OpenClaw: all handlers for `name`, results returned in order. */
  api.fire = async (name, event = {}, ctx = {}) => {
    const handlers = api.hooks.filter((h) => h.name === name);
    if (handlers.length === 0) throw new Error(`no handler registered for ${name}`);
    const results = [];
    for (const h of handlers) results.push(await h.handler(event, ctx));
    return results.length === 1 ? results[0] : results;
  };

  /** Instantiate the tools for a tool context (as OpenClaw does per run). */
  api.toolsFor = (ctx = {}) => {
    const out = [];
    for (const { toolOrFactory } of api.tools) {
      const made = typeof toolOrFactory === "function" ? toolOrFactory(ctx) : toolOrFactory;
      if (Array.isArray(made)) out.push(...made);
      else if (made) out.push(made);
    }
    return Object.fromEntries(out.map((t) => [t.name, t]));
  };

  api.hookNames = () => [...new Set(api.hooks.map((h) => h.name))].sort();
  api.warnings = () => logs.filter((l) => l.level === "warn" || l.level === "error");
  return api;
}

/** A tiny commander-like program that records commands and can run them. */
export function createMockProgram() {
  const make = (name) => {
    const cmd = {
      name,
      children: new Map(),
      options: [],
      handler: undefined,
      desc: "",
      opts() {
        return {};
      },
      command(nameAndArgs) {
        const child = make(nameAndArgs.split(" ")[0]);
        cmd.children.set(child.name, child);
        return child;
      },
      description(text) {
        cmd.desc = text;
        return cmd;
      },
      option(flags, description, defaultValue) {
        cmd.options.push({ flags, description, defaultValue });
        return cmd;
      },
      action(fn) {
        cmd.handler = fn;
        return cmd;
      },
    };
    return cmd;
  };
  const program = make("openclaw");
  /** run(["memory", "stats"], { user: "u1" }) */
  program.run = async (path, opts = {}) => {
    let cmd = program;
    for (const p of path) {
      cmd = cmd.children.get(p);
      if (!cmd) throw new Error(`no command ${path.join(" ")}`);
    }
    const defaults = {};
    for (const o of cmd.options) {
      const m = o.flags.match(/--([\w-]+)/);
      if (m && o.defaultValue !== undefined) defaults[m[1]] = o.defaultValue;
    }
    return cmd.handler({ ...defaults, ...opts }, cmd);
  };
  return program;
}
