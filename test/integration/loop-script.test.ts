/**
 * The default path of SPEC §3's example: the model writes a script with code_execution__execute,
 * the script calls host tools through `tools.*` (each call through the gate, in the script call's
 * context), and the model answers. Scripted provider, real pool workers, real bwrap.
 */
import { afterEach, expect, test } from "bun:test";
import { harnessSse, startHarness, type Harness } from "../harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

test("a script lists the workspace and reads a file through tools.*; the model sees the value and answers", async () => {
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "smart" },
    files: {
      "turns.yaml": `
turns:
  - tool_calls:
      - name: code_execution__execute
        arguments:
          code: |
            const dir = await tools.developer__list_dir({ path: "." });
            const text = await tools.developer__read_file({ path: "notes.txt" });
            console.log("entries", dir.entries.length);
            return { names: dir.entries.map((e) => e.name), text };
  - text: "Read the notes."
`,
    },
    workspaceFiles: { "notes.txt": "scripted hello" },
  });
  const s = await h.createSession();
  const reply = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
  const fin = await reply.waitFor((e) => e.event === "turn_finished");
  expect(fin.data).toMatchObject({ status: "completed", answer: "Read the notes." });
  const requests = reply.events.filter((e) => e.event === "tool_request").map((e) => [e.data.tool, e.data.from_script]);
  expect(requests).toEqual([
    ["code_execution__execute", false],
    ["developer__list_dir", true],
    ["developer__read_file", true],
  ]);
  const exec = reply.events.find((e) => e.event === "tool_result" && e.data.tool === "code_execution__execute")!;
  expect(exec.data.ok).toBe(true);
  const toolMsg = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!;
  const value = JSON.parse(toolMsg.content);
  expect(JSON.stringify(value)).toContain("scripted hello");
  expect(JSON.stringify(value)).toContain("notes.txt");
});

test("the model is offered code_execution__* and subagent__* only; scripts see every other tool", async () => {
  h = await startHarness({
    config: { provider: { name: "scripted", script: "turns.yaml" } },
    files: {
      "turns.yaml": `
turns:
  - tool_calls: [{ name: code_execution__list_tools, arguments: {} }]
  - text: done
`,
    },
  });
  const specs = await h.rt.registry.specs((d) => d.name.startsWith("code_execution__") || d.name.startsWith("subagent__"));
  expect(specs.map((x) => x.name).sort()).toEqual(["code_execution__execute", "code_execution__list_tools", "subagent__spawn", "subagent__watch"]);
  const s = await h.createSession();
  const r = await h.rt.runTurn(s.id, "list");
  expect(r.status).toBe("completed");
  const listed = (await h.rt.store.listMessages(s.id)).find((m) => m.role === "tool")!.content;
  expect(listed).toContain("developer__shell");
  expect(listed).toContain("subagent__spawn");
  expect(listed).not.toContain("code_execution__execute");
});
