// Types of the legacy-ml package (index.js). Request and response shapes follow OpenAI's chat and
// completions APIs; README.md says where they differ.

export interface LoadProgress {
  /** bytes read so far */
  loaded: number;
  /** the file's size, 0 when the server did not say */
  total: number;
  /** loaded / total in [0, 1], null when the size is unknown */
  fraction: number | null;
  /** where the bytes come from: the network, the Cache API (an earlier load), a File/Blob or bytes, a file (node) */
  phase: 'network' | 'cache' | 'memory' | 'file';
}

export interface EngineOptions {
  /** the model: a URL (relative to the page), a File/Blob, an ArrayBuffer or a typed array (copied);
   *  in node also a file path. `.mlb` (tools/convert.py) or GGUF. */
  model: string | URL | Blob | ArrayBuffer | ArrayBufferView;
  /** the tokenizer for a `.mlb` model (llama2.c tokenizer.bin or MLTK); a GGUF carries its own */
  tokenizer?: string | URL | Blob | ArrayBuffer | ArrayBufferView;
  /** threads wanted (default 0: one per core, at most 16). More than one runs only with the threaded
   *  build, on a cross-origin-isolated page (COOP/COEP headers); 1 picks a single-thread build.
   *  engine.info.threads says what runs. */
  threads?: number;
  /** model URLs kept in the Cache API: true (default: reused while the server's ETag, Last-Modified
   *  and length match), 'prefer' (a stored copy without asking the server), false (never) */
  cache?: boolean | 'prefer';
  /** loading progress of the model file */
  onProgress?: (p: LoadProgress) => void;
  /** a shorter context than the model's (smaller KV cache); 0 = the model's */
  max_seq?: number;
  /** the KV cache's elements: 'f32' (default: the reference's bits), 'f16' (half the memory, as
   *  llama.cpp's default) or 'q8_0' (about 0.28 of F32) */
  kv_cache?: 'f32' | 'f16' | 'q8_0';
  /** the chat prompt format instead of the tokenizer's template */
  chat_template?: 'chatml' | 'zephyr' | 'llama2' | 'llama3' | 'qwen3';
  /** the build to run instead of the one the probe picks ('simd128_threads': cross-origin-isolated pages only) */
  build?: WasmBuild;
  /** run in a Worker (default: true in a page, false in node) */
  worker?: boolean;
  /** the `model` field of the responses (default: the URL's file name) */
  model_id?: string;
}

/** the WebAssembly builds the package holds */
export type WasmBuild = 'simd128' | 'scalar' | 'simd128_threads';

export interface ModelInfo {
  name: string;
  /** the file's format */
  format: 'gguf' | 'mlb';
  /** true when the file came from the Cache API (an earlier load of the same URL) */
  from_cache: boolean;
  dim: number;
  hidden_dim: number;
  n_layers: number;
  n_heads: number;
  n_kv_heads: number;
  vocab: number;
  max_seq: number;
  /** 0 F32, 8 Q8_0, 2 Q4_0 */
  wtype: number;
  file_bytes: number;
  weight_bytes: number;
  arena_bytes: number;
  /** the KV cache's elements (createEngine's kv_cache) */
  kv_cache: 'f32' | 'f16' | 'q8_0';
  bos_id?: number;
  eos_id?: number;
  stop_ids?: number[];
}

export interface EngineInfo {
  /** the WebAssembly build running: 'simd128_threads' on a cross-origin-isolated page, else 'simd128' or 'scalar' */
  build: WasmBuild;
  /** why that build, e.g. 'this runtime has no WebAssembly SIMD' */
  build_reason: string;
  simd128: boolean;
  /** true when the threaded (SharedArrayBuffer) build runs */
  threaded: boolean;
  /** threads running */
  threads: number;
  /** the threads option (0: as many as the build gives) */
  threads_requested: number;
  /** why fewer threads run than requested ('' when as requested) */
  threads_note: string;
  /** whether the page is cross-origin isolated (SharedArrayBuffer usable; false in node) */
  isolated: boolean;
  /** the build's ISA name, e.g. 'wasm_simd128' */
  isa: string;
  /** the chat format in use, null when the tokenizer has no known template and none was given */
  chat_format: string | null;
  model: ModelInfo;
  /** WebAssembly memory after loading, bytes */
  wasm_memory_bytes: number;
  /** whether the engine runs in a Worker */
  worker: boolean;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface SamplingRequest {
  /** ignored: the engine serves the model it loaded */
  model?: string;
  /** 0 = greedy; default 1 */
  temperature?: number;
  /** nucleus sampling in (0, 1]; default 1 (off) */
  top_p?: number;
  /** RNG seed, an integer >= 0; default: random */
  seed?: number;
  /** tokens to generate at most; default: until a stop or the context is full */
  max_tokens?: number;
  max_completion_tokens?: number;
  /** texts that end the generation (not included in the text) */
  stop?: string | string[] | null;
  presence_penalty?: number;
  frequency_penalty?: number;
  /** {token id: bias}; -Infinity bans a token */
  logit_bias?: Record<string, number>;
  response_format?: {type: 'text'} | {type: 'json_object'} |
                    {type: 'json_schema'; json_schema: {name?: string; schema: object; strict?: boolean}};
  /** only 1 */
  n?: 1;
  /** stops the generation at its next token; the call (or the stream's iteration) rejects with an
   *  Error named 'AbortError' */
  signal?: AbortSignal;
  stream_options?: {include_usage?: boolean};
}

export interface ChatCompletionRequestBase extends SamplingRequest {
  messages: ChatMessage[];
}
export interface ChatCompletionRequestStreaming extends ChatCompletionRequestBase {
  stream: true;
}
export interface ChatCompletionRequestNonStreaming extends ChatCompletionRequestBase {
  stream?: false | null;
}
export type ChatCompletionRequest = ChatCompletionRequestStreaming | ChatCompletionRequestNonStreaming;

export type FinishReason = 'stop' | 'length';

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** cached_tokens: prompt tokens kept in the KV cache from the previous request (prefix reuse) */
  prompt_tokens_details: {cached_tokens: number};
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{index: number; message: {role: 'assistant'; content: string}; finish_reason: FinishReason; logprobs: null}>;
  usage: CompletionUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{index: number; delta: {role?: 'assistant'; content?: string};
                  finish_reason: FinishReason | null; logprobs: null}>;
  /** only on the last chunk, with stream_options.include_usage (its choices are empty) */
  usage?: CompletionUsage;
}

export interface CompletionRequestBase extends SamplingRequest {
  prompt: string;
  /** the prompt's text first (as the native ml_run prints it), then the completion */
  echo?: boolean;
}
export interface CompletionRequestStreaming extends CompletionRequestBase {
  stream: true;
}
export interface CompletionRequestNonStreaming extends CompletionRequestBase {
  stream?: false | null;
}
export type CompletionRequest = CompletionRequestStreaming | CompletionRequestNonStreaming;

export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<{index: number; text: string; finish_reason: FinishReason | null; logprobs: null}>;
  usage?: CompletionUsage;
}

export interface Engine {
  readonly info: EngineInfo;
  chat: {
    completions: {
      create(req: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
      create(req: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
      create(req: ChatCompletionRequest): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
    };
  };
  completions: {
    create(req: CompletionRequestStreaming): Promise<AsyncIterable<Completion>>;
    create(req: CompletionRequestNonStreaming): Promise<Completion>;
    create(req: CompletionRequest): Promise<AsyncIterable<Completion> | Completion>;
  };
  /** token ids of text, BOS first unless add_bos is false */
  tokenize(text: string, opts?: {add_bos?: boolean}): Promise<number[]>;
  /** the text of token ids */
  detokenize(ids: number[]): Promise<string>;
  /** the engine's WebAssembly memory now */
  memory(): Promise<{wasm_memory_bytes: number}>;
  /** frees the model and the WebAssembly instance (in a page: ends the Worker) */
  unload(): Promise<void>;
}

export function createEngine(opts: EngineOptions): Promise<Engine>;

/** the error a generation stopped by its AbortSignal rejects with (name 'AbortError') */
export class AbortedError extends Error {}
