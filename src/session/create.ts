/**
 * @module session/create
 * Creating a session (SPEC §6, §10): a root from the request and the config's defaults, or a child that
 * inherits its parent's workspace, mode, sandbox, headless flag, provider/model and privacy tier.
 */
import { realpathSync, statSync } from "node:fs";
import type { Config, Mode, Privacy, SandboxPolicyName } from "../config/schema.ts";
import { AirlockError } from "../errors.ts";
import { rootOf, type ParentLookup } from "./graph.ts";
import type { NewSession, Session } from "./types.ts";

/** `POST /sessions` body and `Runtime.createSession` input (SPEC §6). */
export interface CreateSessionInput {
  workspace?: string;
  mode?: Mode;
  sandbox?: SandboxPolicyName;
  privacy?: Privacy;
  headless?: boolean;
  provider?: string;
  model?: string | null;
  parent_session_id?: string | null;
  title?: string | null;
}

/** What session creation needs: the session rows, the defaults, and the provider check for a privacy tier. */
export interface SessionCreationDeps {
  store: ParentLookup & { requireSession(id: string): Promise<Session>; createSession(input: NewSession, rootId?: string): Promise<Session> };
  config: Readonly<Config>;
  /** Workspace of a root session that names none (absolute). */
  defaultWorkspace: string;
  /** Every session is headless (`airlock serve --headless`). */
  forceHeadless: boolean;
  /**
   * Refuses a provider the privacy tier does not allow; `parent` is the session whose effective config
   * the new session will share, absent for a root.
   * @throws AirlockError `privacy_violation`, `bad_request` (unknown provider).
   */
  checkProvider(session: NewSession, parent?: Session): void;
}

/**
 * Creates a session, applying inheritance and privacy rules.
 * @throws AirlockError `session_not_found` (unknown parent), `privacy_violation`, `bad_request` (workspace missing or not a folder, unknown provider).
 */
export async function createSession(deps: SessionCreationDeps, input: CreateSessionInput): Promise<Session> {
  const { store, config } = deps;
  if (input.parent_session_id) {
    const parent = await store.requireSession(input.parent_session_id);
    const root = await rootOf(store, parent.id);
    if (input.privacy && input.privacy !== parent.privacy) {
      throw new AirlockError(
        "privacy_violation",
        `a ${input.privacy} session cannot be created under the ${parent.privacy} session ${parent.id}: a child inherits its parent's privacy tier; drop "privacy" or use ${parent.privacy}`,
      );
    }
    const child: NewSession = {
      parent_session_id: parent.id,
      workspace: input.workspace ? checkWorkspace(input.workspace) : parent.workspace,
      mode: input.mode ?? parent.mode,
      sandbox: input.sandbox ?? parent.sandbox,
      privacy: parent.privacy,
      headless: parent.headless || input.headless === true,
      provider: input.provider ?? parent.provider,
      model: input.model !== undefined ? input.model : parent.model,
      title: input.title ?? null,
    };
    deps.checkProvider(child, parent);
    return store.createSession(child, root);
  }
  const privacy = input.privacy ?? config.privacy;
  const provider = input.provider ?? config.provider.name;
  const rootInput: NewSession = {
    parent_session_id: null,
    workspace: checkWorkspace(input.workspace ?? deps.defaultWorkspace),
    mode: input.mode ?? config.mode,
    sandbox: input.sandbox ?? config.sandbox,
    privacy,
    headless: input.headless === true || deps.forceHeadless,
    provider,
    model: input.model !== undefined ? input.model : provider === config.provider.name ? (config.provider.model ?? null) : null,
    title: input.title ?? null,
  };
  deps.checkProvider(rootInput);
  return store.createSession(rootInput);
}

/** Real path of an existing directory. @throws AirlockError `bad_request`. */
function checkWorkspace(p: string): string {
  let real: string;
  try {
    real = realpathSync(p);
  } catch {
    throw new AirlockError("bad_request", `workspace ${p} does not exist; create it or pass an existing directory`);
  }
  if (!statSync(real).isDirectory()) throw new AirlockError("bad_request", `workspace ${p} is not a directory`);
  return real;
}
