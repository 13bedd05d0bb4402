#!/usr/bin/env bash
# A UserPromptSubmit hook in Claude Code's protocol (stdin: {"prompt": …, …}).
# It blocks a prompt that holds what looks like an API key (exit 2: stderr is the reason shown to the
# person; the prompt never reaches the model), and has no opinion otherwise.
prompt=$(jq -r .prompt)
if printf '%s' "$prompt" | grep -Eq '(sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{36})'; then
  echo "the prompt contains what looks like an API key; remove it and send it again" >&2
  exit 2
fi
exit 0
