/** What the host does next. */
export interface Verdict {
  /** `allow`, `nudge` (give the model `message`), `deny` (do not run the call; the model reads
   * `message` instead), `ask` (the human decides; with no human at hand, stop) or `stop` (one
   * last model call with no tools and `message` as its instruction gives the final answer). */
  action: 'allow' | 'nudge' | 'deny' | 'ask' | 'stop';
  /** The nudge, the denial, the question, or the final-answer instruction. */
  message: string;
  /** Why, for `ask` and `stop` (`loop_detected:...`, `limit:...`, `ask_human`). */
  reason: string;
}

export interface GuardOptions {
  /** `coding-agent` (the default) or `task`. */
  profile?: 'coding-agent' | 'task';
  /** A path to a looprail config file (TOML or JSON), or an object of the same sections. */
  config?: string | Record<string, unknown>;
}

export interface ToolCallInput {
  id: string;
  name: string;
  /** JSON text, or a value. */
  arguments: unknown;
}

export interface UsageInput {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export interface ReplyInput {
  text?: string;
  calls?: ToolCallInput[];
  usage?: UsageInput;
  /** The model that answered, for its price. */
  model?: string;
}

/** A guard event, as `looprail audit` reports it. */
export interface GuardEvent {
  callIndex: number;
  event: string;
  detector: string;
  level: string;
  tool: string;
  tier: string;
  evidence: number[];
}

/** One agent's guard: loop detection with its escalation ladder, budgets and time limits, the
 * degenerate-reply watch. Report each step of the agent's loop; do what the verdict says. */
export declare class Guard {
  constructor(options?: GuardOptions);
  /** A guard that goes on from what `save()` returned. */
  static restore(saved: string, options?: GuardOptions): Guard;
  /** The guard's state as JSON text. */
  save(): string;
  /** A message from the user: a new stretch with its own budgets and a fresh ladder. */
  userMessage(nowMs?: number): void;
  /** Before each model call: budgets, time limits, the iteration cap. */
  beforeModel(nowMs?: number): Verdict;
  /** A piece of streamed text; true when the reply repeats itself and should be cut. */
  streamText(delta: string): boolean;
  /** The model's reply. */
  modelResponse(reply: ReplyInput, nowMs?: number): Verdict;
  /** Before a call of the last reply runs. */
  beforeTool(call: ToolCallInput): Verdict;
  /** A call's result (for a denied call, the denial the model read). */
  afterTool(id: string, output: string, failed?: boolean): Verdict;
  /** The guard events since the last call. */
  takeEvents(): GuardEvent[];
}
