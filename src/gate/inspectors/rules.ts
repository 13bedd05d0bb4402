/**
 * @module gate/inspectors/rules
 * Permission rules (`permissions.allow / ask / deny`, Claude Code's syntax; gate/rules/) as an
 * inspector, named `rule` on verdicts: the first matching rule decides, deny > ask > allow, and the
 * verdict carries the rule's text. No matching rule: no verdict. A rule's allow answers the mode's ask
 * (gate/verdict.ts `combine`), never the floor, a hook's deny or another ask.
 */
import { assertNever } from "../../errors.ts";
import type { ToolDef } from "../../tool/tool.ts";
import { ruleSetFor, type RuleSet } from "../rules/index.ts";
import type { SessionRuleSets, TreeRules } from "../rules/session.ts";
import type { Verdict } from "../verdict.ts";
import { judgementPaths, type RealPaths } from "./floor-paths.ts";
import type { Inspector } from "./inspector.ts";

/**
 * The rule verdict for one call, or none when no rule applies.
 * @param workspace the session's workspace (absolute)
 * @param paths this judgement's resolved paths, shared with the security floor
 */
export function ruleVerdicts(rules: RuleSet, def: Pick<ToolDef, "name" | "claude">, args: unknown, workspace: string, paths?: RealPaths): Verdict[] {
  const m = rules.judge(def, args, workspace, paths);
  if (!m) return [];
  switch (m.list) {
    case "allow":
      return [{ kind: "allow", inspector: "rule", rule: m.rule, answersMode: true }];
    case "ask":
      return [{ kind: "ask", inspector: "rule", userProof: false, rule: m.rule, reason: `the permission rule ${m.rule} (permissions.ask) asks before this call` }];
    case "deny":
      return [{ kind: "deny", inspector: "rule", code: "denied", rule: m.rule, reason: `the permission rule ${m.rule} (permissions.deny) refuses this call; change permissions in airlock.yaml to allow it` }];
    default:
      return assertNever(m.list, "rule list");
  }
}

/** The `rule` inspector: cheap (pure but for resolving a file call's symlinks), over the session's effective `permissions`. */
export const rulesInspector: Inspector = {
  cost: "cheap",
  inspect: (c) => ruleVerdicts(ruleSetFor(c.config.permissions), c.def, c.args, c.session.workspace, judgementPaths(c)),
};

/**
 * The `rule` inspector with the session rules of the call's tree ("Allow for this session") joined to the
 * config's (gate/rules/session.ts): one judgement, deny > ask > allow; an allow by a session rule carries
 * `session: true`. A session rule is an allow rule like any other: it answers the mode's ask only (never
 * the floor, a rule's ask or deny, a hook's deny: gate/verdict.ts `combine`).
 */
export function treeRulesInspector(sets: SessionRuleSets): Inspector {
  return {
    cost: "cheap",
    inspect(c) {
      const judge = (tree: TreeRules): Verdict[] => {
        const verdicts = ruleVerdicts(tree.set, c.def, c.args, c.session.workspace, judgementPaths(c));
        if (tree.session.size === 0) return verdicts;
        return verdicts.map((v) => (v.kind === "allow" && v.rule !== undefined && v.rule.split(" + ").some((t) => tree.session.has(t)) ? { ...v, session: true } : v));
      };
      // no query once the tree's rules are cached (every call after the first of a tree)
      const tree = sets.forSession(c.config.permissions, c.session.id);
      return tree instanceof Promise ? tree.then(judge) : judge(tree);
    },
  };
}
