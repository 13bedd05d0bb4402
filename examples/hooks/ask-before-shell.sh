#!/usr/bin/env bash
# A PreToolUse hook in Claude Code's protocol (stdin: the call as JSON; stdout: the decision).
# It asks a person before any shell command that writes a file with ">", and has no opinion otherwise.
input=$(cat)
case "$input" in
  *'"tool_name":"Bash"'*'>'*)
    printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"this shell command writes a file"}}'
    ;;
esac
exit 0
