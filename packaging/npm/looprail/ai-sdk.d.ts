import type { LanguageModel, StepResult, ToolSet } from 'ai';
import type { Guard, GuardOptions } from './index';

export interface GuardAgentOptions extends GuardOptions {
  /** A guard to use (else one is made from `profile` and `config`). */
  guard?: Guard;
  /** Called with the guard's question when it wants a human's answer; true lets the agent go
   * on. Without it, a question is a stop. */
  ask?: (question: string) => boolean;
}

export interface GuardedAgent {
  guard: Guard;
  /** The model, wrapped: budgets before each call, each reply read, the final answer forced. */
  model(model: LanguageModel): LanguageModel;
  /** The tools, wrapped: a call may be denied, a result may carry a nudge. */
  tools<T extends ToolSet>(tools: T): T;
  /** Ends the step loop once the final answer after a stop has come. A stop condition for any
   * tool set (generic, so it sits beside `stepCountIs(n)` whatever the tools' types). */
  stopWhen: <TOOLS extends ToolSet>(options: { steps: Array<StepResult<TOOLS>> }) => boolean;
}

/** looprail's guard for one agent of the Vercel AI SDK. */
export declare function guardAgent(options?: GuardAgentOptions): GuardedAgent;
