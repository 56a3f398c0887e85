/**
 * Minimal structural types for the parts of OpenClaw's plugin API this plugin uses.
 *
 * The plugin deliberately has no runtime (or compile-time) dependency on the `openclaw`
 * package: `definePluginEntry` only returns a plain `{ id, name, description, kind,
 * configSchema, register }` object, which `index.ts` builds itself. Keeping these types
 * local and loose (every context field optional, unknown extra fields allowed) is what lets
 * the plugin keep working as OpenClaw's API grows: new fields are ignored, missing ones
 * degrade to "no identity" rather than a crash.
 *
 * Checked against openclaw 2026.9.6 (`dist/plugin-sdk/plugin-entry.d.ts`).
 */

export interface PluginLogger {
  debug?: (message: string) => void;
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
}

export interface ToolResult {
  content: Array<{ type: "text"; text: string }>;
  details?: unknown;
}

export interface AgentTool {
  name: string;
  label?: string;
  description: string;
  parameters: Record<string, unknown>;
  execute: (toolCallId: string, params: unknown, signal?: AbortSignal) => Promise<ToolResult>;
}

/** Context handed to a tool factory (OpenClawPluginToolContext). */
export interface ToolContext {
  agentId?: string | undefined;
  sessionKey?: string | undefined;
  sessionId?: string | undefined;
  workspaceDir?: string | undefined;
  messageChannel?: string | undefined;
  agentAccountId?: string | undefined;
  requesterSenderId?: string | undefined;
  senderIsOwner?: boolean | undefined;
  [key: string]: unknown;
}

export type ToolFactory = (ctx: ToolContext) => AgentTool | AgentTool[] | null | undefined;

/**
 * Union of the hook context shapes we read (agent, tool, message, session, gateway).
 * Every field is optional; unknown fields are ignored.
 */
export interface HookContext {
  runId?: string | undefined;
  agentId?: string | undefined;
  sessionKey?: string | undefined;
  sessionId?: string | undefined;
  workspaceDir?: string | undefined;
  channel?: string | undefined;
  channelId?: string | undefined;
  messageProvider?: string | undefined;
  accountId?: string | undefined;
  conversationId?: string | undefined;
  senderId?: string | undefined;
  messageId?: string | undefined;
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  requester?: { channel?: string; senderId?: string } | undefined;
  channelContext?: { sender?: { id?: string }; chat?: { id?: string } } | undefined;
  port?: number | undefined;
  [key: string]: unknown;
}

export type HookHandler = (event: any, ctx: HookContext) => unknown;

export interface HookOptions {
  priority?: number;
  timeoutMs?: number;
}

/** The commander `Command` subset the CLI registrar uses. */
export interface CliCommand {
  command(nameAndArgs: string): CliCommand;
  description(text: string): CliCommand;
  option(flags: string, description?: string, defaultValue?: unknown): CliCommand;
  action(fn: (...args: any[]) => void | Promise<void>): CliCommand;
}

export interface CliContext {
  program: CliCommand;
  logger?: PluginLogger;
  [key: string]: unknown;
}

export interface CliDescriptor {
  name: string;
  description: string;
  hasSubcommands: boolean;
}

export interface PluginApi {
  id?: string;
  registrationMode?: string;
  pluginConfig?: Record<string, unknown> | undefined;
  logger: PluginLogger;
  registerTool: (tool: AgentTool | ToolFactory, opts?: { name?: string; names?: string[] }) => void;
  on: (hookName: string, handler: HookHandler, opts?: HookOptions) => void;
  registerCli?: (
    registrar: (ctx: CliContext) => void | Promise<void>,
    opts?: { descriptors?: CliDescriptor[]; commands?: string[] },
  ) => void;
  [key: string]: unknown;
}

export interface PluginEntry {
  id: string;
  name: string;
  description: string;
  kind: "memory";
  readonly configSchema: unknown;
  register: (api: PluginApi) => void;
}
