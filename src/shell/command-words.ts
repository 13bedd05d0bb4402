/**
 * @module shell/command-words
 * The command words the security floor and the files-a-call-names reader (gate/named-files.ts) both
 * know, in one place so the two never drift: shells, wrappers that run the command after them, and the
 * reserved words that may precede a command.
 */

/** Shells: with `-c` they run a command string, without it a script file or standard input. */
export const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"]);

/** Commands that run the command after them (after their own flags): `sudo rm x`, `nice -n 5 sh x.sh`, `xargs rm`. */
export const WRAPPERS: ReadonlySet<string> = new Set([
  "sudo", "doas", "command", "builtin", "exec", "nice", "nohup", "time", "stdbuf", "xargs", "env", "timeout", "ionice",
  "chroot", "busybox", "setsid", "unbuffer", "noglob",
]);

/** Shell reserved words that may precede a command (`{ rm …; }`, `then rm …`, `! rm …`). */
export const RESERVED: ReadonlySet<string> = new Set(["{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"]);
