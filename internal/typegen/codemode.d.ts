/**
 * codemode standard library: the @codemode/* modules and the sandbox globals.
 * A script type-checks as the sandbox runs it with TypeScript 5.4 or later:
 *   tsc --noEmit --strict --module esnext --target es2022 --typeRoots ./.no-types --lib es5,es2015.core,es2015.collection,es2015.iterable,es2015.generator,es2015.promise,es2015.proxy,es2015.reflect,es2015.symbol,es2015.symbol.wellknown,es2016.array.include,es2017.date,es2017.object,es2017.string,es2017.typedarrays,es2018.asynciterable,es2018.asyncgenerator,es2018.promise,es2018.regexp,es2019.array,es2019.object,es2019.string,es2019.symbol,es2020.bigint,es2020.date,es2020.number,es2020.promise,es2020.string,es2020.symbol.wellknown,es2021.promise,es2021.string,es2022.array,es2022.error,es2022.object,es2022.regexp,es2022.string,es2023.array,es2023.collection codemode.d.ts <servers>.d.ts script.ts
 * in a directory without a tsconfig.json (TypeScript 6 and later refuse files
 * named on the command line next to one). --module and --target allow
 * top-level await; --typeRoots names a directory that does not exist, so that
 * no installed @types (node's process, require, ...) are added; --lib is
 * es2023 without what the sandbox lacks: SharedArrayBuffer, Atomics, WeakRef,
 * FinalizationRegistry (deleted) and the Intl libraries. The sandbox has no
 * Intl at all, but TypeScript declares part of it whatever the --lib: es5
 * (Collator, NumberFormat, DateTimeFormat) and, through the es2020 BigInt,
 * Date, Number and String libraries, es2018.intl and es2020.intl
 * (PluralRules, RelativeTimeFormat, Locale, DisplayNames). Those type-check
 * and then fail (ReferenceError: 'Intl' is not defined); so do the locales and
 * options of toLocaleString, toLocaleDateString, localeCompare and the like,
 * which the sandbox ignores (with a LOCALE_IGNORED warning).
 * Then what §3.5 forbids fails to type-check (fetch, XMLHttpRequest, WebSocket,
 * setInterval, process, require are not declared), except eval and the
 * Function constructor, which every ES lib declares: the sandbox deletes eval,
 * and Function (with strings or without) throws EvalError.
 * Server functions (@codemode/servers/<id>) resolve to the tool's
 * structuredContent when the tool declares an outputSchema; otherwise to
 * ToolResult (below, §5.3.2).
 * Their doc comments carry the MCP tool annotations the server set:
 * @readOnly, @destructive or @nonDestructive, @idempotent, @openWorld or
 * @closedWorld (readOnlyHint, destructiveHint, idempotentHint, openWorldHint);
 * @requiresApproval marks a tool the gateway's policy asks the user about
 * before every call (a declined call throws ApprovalDeniedError).
 */

declare module "@codemode/discovery" {
  /** The Code Mode spec version this host implements ("1.0.0"). */
  export const specVersion: string;
  export type Detail = "name" | "description" | "full";
  export interface ServerInfo {
    serverId: string;
    serverName: string;
    capabilities?: string[];
    /**
     * "connected"; "connecting": still starting, ask again later; "error":
     * it failed (see error); "backoff": it failed or died and is restarted
     * on the first use after retryInMs.
     */
    status: "connected" | "connecting" | "error" | "backoff";
    /** Why it is not connected. */
    error?: string;
    /** With status "backoff": milliseconds until it may be restarted. */
    retryInMs?: number;
  }
  export interface ServerDescription extends ServerInfo {
    description?: string;
    version?: string;
    title?: string;
    toolCount: number;
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
    /** MCP execution properties, when the tool declared task support: it runs as an MCP task, and its call resolves when the task ends. */
    execution?: { taskSupport: "optional" | "required" };
    /** The gateway asks the user before every call (ApprovalDeniedError if declined). */
    requiresApproval?: boolean;
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
    /** Maximum number of results, an integer: 10 if absent or not positive, at most 100 (larger values are capped). */
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
    /** Every other member of options becomes a read-only field of the error. */
    constructor(message?: string, options?: { hint?: string; [field: string]: unknown });
    /** One corrective action ("" if none was given). */
    readonly hint: string;
  }
  /**
   * A tool input failed schema validation; nothing was sent to the server.
   * The fields are absent only when the input was not JSON data at all.
   */
  export class SchemaValidationError extends CodemodeError {
    readonly serverId?: string;
    readonly toolName?: string;
    readonly exportName?: string;
    /** JSON Pointer to the failing value in the input ("" for the input itself). */
    readonly path?: string;
    readonly expected?: string;
    readonly received?: string;
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
    /** Which limit: "maxToolCalls", "maxMemoryBytes", "pendingOperations", "pendingTimers", … */
    readonly limit: string;
    /** The configured value of the limit, for limits of the run's configuration. */
    readonly value?: number;
  }
  /**
   * The user declined a call that needs approval (tools marked
   * @requiresApproval); the server never saw it. Retrying will not help:
   * do without the call, or tell the user what it was for.
   */
  export class ApprovalDeniedError extends CodemodeError {
    readonly serverId: string;
    readonly toolName: string;
  }
}

/** Types shared by every server's declarations. */
declare namespace CodeMode {
  /** A JSON object, as structuredContent is. */
  type StructuredContent = { [key: string]: unknown };
  /** An MCP tools/call result. Binary data (image, audio, blob) is base64. */
  interface CallToolResult {
    content: ContentBlock[];
    structuredContent?: StructuredContent;
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
    tools: { toolName: string; exportName: string; description?: string; requiresApproval?: boolean }[];
  }
}

/**
 * What a tool without an outputSchema resolves to (§5.3.2), by the first rule
 * that applies: the result's structuredContent (a JSON object) if it has one;
 * the text of a single text block as a string; otherwise the whole MCP result.
 * Check before use: typeof r === "string" for text; an object is either
 * structuredContent or the MCP result (content, isError), by its fields.
 */
type ToolResult = string | CodeMode.CallToolResult | CodeMode.StructuredContent;

/** Assign the run's result here (§3.2.2): it becomes the response's `result` (null if never set). */
declare var __codemode_result__: unknown;

/** Captured into the response's logs; nothing else is available. */
declare var console: {
  log(...data: unknown[]): void;
  /** The same as log (level "log"). */
  info(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  /** Logged at level "log" after "Trace:", without a stack. */
  trace(...data: unknown[]): void;
  /** Logged at level "log", as JSON. */
  table(data: unknown): void;
  /** Logged at level "log", as JSON. */
  dir(data: unknown): void;
};

declare function setTimeout<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function clearTimeout(id?: number): void;

/** Base64 of a string of code units 0 to 255 (HTML btoa); any other character throws DOMException "InvalidCharacterError" (encode text to bytes first, with TextEncoder). */
declare function btoa(data: string): string;
/** The bytes of base64 text as a string of code units 0 to 255 (HTML atob; white space and missing padding are accepted); bad input throws DOMException "InvalidCharacterError". */
declare function atob(data: string): string;
/**
 * A deep copy by the HTML structured clone algorithm: primitives, Boolean,
 * Number, BigInt and String objects, Date, RegExp, ArrayBuffer, typed arrays,
 * DataView, Map, Set, Error, DOMException, arrays and plain objects (own
 * enumerable properties; prototypes are not kept), cycles included.
 * Functions, symbols, WeakMap, WeakSet, Promise, URL, URLSearchParams,
 * TextEncoder and TextDecoder throw DOMException "DataCloneError".
 * options.transfer moves ArrayBuffers into the copy, detaching them.
 */
declare function structuredClone<T>(value: T, options?: { transfer?: ArrayBuffer[] }): T;
/** Runs callback as a microtask: after the current code, before any timer. */
declare function queueMicrotask(callback: () => void): void;

/** The error btoa, atob and structuredClone throw (WebIDL). */
declare class DOMException extends Error {
  constructor(message?: string, options?: string | { name?: string; cause?: unknown });
  readonly name: string;
  readonly message: string;
  /** The legacy code of the name (5 for "InvalidCharacterError", 25 for "DataCloneError"), else 0. */
  readonly code: number;
  static readonly INDEX_SIZE_ERR: 1;
  static readonly DOMSTRING_SIZE_ERR: 2;
  static readonly HIERARCHY_REQUEST_ERR: 3;
  static readonly WRONG_DOCUMENT_ERR: 4;
  static readonly INVALID_CHARACTER_ERR: 5;
  static readonly NO_DATA_ALLOWED_ERR: 6;
  static readonly NO_MODIFICATION_ALLOWED_ERR: 7;
  static readonly NOT_FOUND_ERR: 8;
  static readonly NOT_SUPPORTED_ERR: 9;
  static readonly INUSE_ATTRIBUTE_ERR: 10;
  static readonly INVALID_STATE_ERR: 11;
  static readonly SYNTAX_ERR: 12;
  static readonly INVALID_MODIFICATION_ERR: 13;
  static readonly NAMESPACE_ERR: 14;
  static readonly INVALID_ACCESS_ERR: 15;
  static readonly VALIDATION_ERR: 16;
  static readonly TYPE_MISMATCH_ERR: 17;
  static readonly SECURITY_ERR: 18;
  static readonly NETWORK_ERR: 19;
  static readonly ABORT_ERR: 20;
  static readonly URL_MISMATCH_ERR: 21;
  static readonly QUOTA_EXCEEDED_ERR: 22;
  static readonly TIMEOUT_ERR: 23;
  static readonly INVALID_NODE_TYPE_ERR: 24;
  static readonly DATA_CLONE_ERR: 25;
}

/** new ArrayBuffer() is a zero-length buffer (lib es2017.arraybuffer, which TypeScript 5.4 lacks). */
interface ArrayBufferConstructor {
  new (): ArrayBuffer;
}

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
  static canParse(url: string | URL, base?: string | URL): boolean;
  /** The URL, or null where the constructor would throw. */
  static parse(url: string | URL, base?: string | URL): URL | null;
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
