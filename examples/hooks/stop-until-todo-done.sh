#!/bin/sh
# A Stop / SubagentStop hook (Claude Code's format): keep the agent working while TODO.md in the
# workspace still has open items "- [ ]". stop_hook_active is true when the turn already went on
# because of a Stop hook: then let it end, so the hook can never loop.
input=$(cat)
case "$input" in *'"stop_hook_active":true'*) exit 0 ;; esac
todo="$CLAUDE_PROJECT_DIR/TODO.md"
if [ -f "$todo" ] && grep -q -- '- \[ \]' "$todo"; then
  echo "TODO.md still has open items; finish them or explain why not" >&2
  exit 2
fi
exit 0
