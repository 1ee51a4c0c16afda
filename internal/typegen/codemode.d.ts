/**
 * codemode standard library: the @codemode/* modules and the sandbox globals.
 * A script type-checks exactly as the sandbox runs it with
 *   tsc --noEmit --strict --lib es2023 --types "" codemode.d.ts <servers>.d.ts script.ts
 * Server functions (@codemode/servers/<id>) resolve to the tool's
 * structuredContent when the tool declares an outputSchema; otherwise to
 * ToolResult: the text of a single text block, else the MCP result (§5.3.2).
 * Their doc comments carry the MCP tool annotations the server set:
 * @readOnly, @destructive or @nonDestructive, @idempotent, @openWorld or
 * @closedWorld (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).
 */

declare module "@codemode/discovery" {
  /** The Code Mode spec version this host implements ("1.0.0"). */
  export const specVersion: string;
  export type Detail = "name" | "description" | "full";
  export interface ServerInfo {
    serverId: string;
    serverName: string;
    capabilities?: string[];
    status: "connected" | "not-connected" | "error";
    error?: string;
  }
  export interface ServerDescription extends ServerInfo {
    description?: string;
    version?: string;
    title?: string;
    toolCount?: number;
  }
  export interface ToolAnnotations {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  }
  export interface ToolSummary {
    toolName: string;
    exportName: string;
    description?: string;
    annotations?: ToolAnnotations;
  }
  /** Fields present depend on `detail`: "name" gives toolName and exportName, "description" (default) adds description and annotations, "full" adds the schemas. */
  export interface ToolDefinition extends ToolSummary {
    inputSchema?: object;
    outputSchema?: object;
  }
  export interface SearchResult extends ToolDefinition {
    serverId: string;
  }
  export interface SearchResults {
    query: string;
    results: SearchResult[];
  }
  export interface ListToolsOptions {
    /** @default "description" */
    detail?: Detail;
  }
  export interface SearchToolsOptions {
    /** @default "description" */
    detail?: Detail;
    /** Search one server only. */
    serverId?: string;
    /** Maximum number of results; defaults to the host's maximum. */
    limit?: number;
  }
  export function listServers(): Promise<ServerInfo[]>;
  export function describeServer(serverId: string): Promise<ServerDescription>;
  export function listTools(serverId: string, options?: ListToolsOptions): Promise<ToolDefinition[]>;
  /** toolName may also be the export name; the definition has detail "full". */
  export function getTool(serverId: string, toolName: string): Promise<ToolDefinition>;
  export function searchTools(query: string, options?: SearchToolsOptions): Promise<SearchResults>;
}

declare module "@codemode/errors" {
  /** Base class of every error the host throws into a script. */
  export class CodemodeError extends Error {
    /** One corrective action. */
    readonly hint: string;
  }
  /** A tool input failed schema validation; nothing was sent to the server. */
  export class SchemaValidationError extends CodemodeError {
    readonly serverId: string;
    readonly toolName: string;
    readonly exportName: string;
    /** JSON Pointer to the failing value in the input. */
    readonly path: string;
    readonly expected: string;
    readonly received: string;
    /** A minimal valid input, from the schema's examples or synthesized. */
    readonly example?: unknown;
  }
  export class ToolNotFoundError extends CodemodeError {
    readonly serverId: string;
    readonly toolName: string;
    readonly available: string[];
  }
  export class ServerNotFoundError extends CodemodeError {
    readonly serverId: string;
    readonly available: string[];
  }
  /** The tool returned an MCP result with isError: true. */
  export class ToolCallError extends CodemodeError {
    readonly serverId: string;
    readonly toolName: string;
    readonly result?: unknown;
  }
  export class AuthenticationError extends CodemodeError {
    readonly serverId: string;
    readonly toolName?: string;
  }
  /** A sandbox limit (timeout, memory, tool calls) was exceeded. */
  export class SandboxLimitError extends CodemodeError {
    readonly limit: string;
    readonly value: number;
  }
}

/** Types shared by every server's declarations. */
declare namespace CodeMode {
  type ToolResult = string | CallToolResult;
  /** An MCP tools/call result. Binary data (image, audio, blob) is base64. */
  interface CallToolResult {
    content: ContentBlock[];
    structuredContent?: { [key: string]: unknown };
    isError?: boolean;
    _meta?: { [key: string]: unknown };
  }
  type ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;
  interface ContentAnnotations {
    audience?: ("user" | "assistant")[];
    priority?: number;
    lastModified?: string;
  }
  interface TextContent {
    type: "text";
    text: string;
    annotations?: ContentAnnotations;
  }
  interface ImageContent {
    type: "image";
    /** base64 */
    data: string;
    mimeType: string;
    annotations?: ContentAnnotations;
  }
  interface AudioContent {
    type: "audio";
    /** base64 */
    data: string;
    mimeType: string;
    annotations?: ContentAnnotations;
  }
  interface ResourceLink {
    type: "resource_link";
    uri: string;
    name: string;
    title?: string;
    description?: string;
    mimeType?: string;
    size?: number;
    annotations?: ContentAnnotations;
  }
  interface EmbeddedResource {
    type: "resource";
    resource: { uri: string; mimeType?: string; text: string } | { uri: string; mimeType?: string; /** base64 */ blob: string };
    annotations?: ContentAnnotations;
  }
  /** The `__meta__` export of every server module (§5.2). */
  interface ServerMeta {
    serverId: string;
    serverName: string;
    serverVersion?: string;
    tools: { toolName: string; exportName: string; description?: string }[];
  }
}

/** What a tool without an outputSchema resolves to (§5.3.2): a single text block as its string, anything else as the MCP result. */
type ToolResult = CodeMode.ToolResult;

/** Assign the run's result here (§3.2.2): it becomes the response's `result` (null if never set). */
declare var __codemode_result__: unknown;

/** Captured into the response's logs; nothing else is available. */
declare var console: {
  log(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
};

declare function setTimeout<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function clearTimeout(id: number | undefined): void;

declare class TextEncoder {
  readonly encoding: "utf-8";
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string;
}

declare class URL {
  constructor(url: string | URL, base?: string | URL);
  hash: string;
  host: string;
  hostname: string;
  href: string;
  readonly origin: string;
  password: string;
  pathname: string;
  port: string;
  protocol: string;
  search: string;
  readonly searchParams: URLSearchParams;
  username: string;
  toString(): string;
  toJSON(): string;
}

declare class URLSearchParams {
  constructor(init?: string[][] | Record<string, string> | string | URLSearchParams);
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  toString(): string;
  forEach(callback: (value: string, key: string, parent: URLSearchParams) => void): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
