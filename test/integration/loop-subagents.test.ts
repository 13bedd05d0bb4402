/**
 * Turns with the scripted provider and subagents over the real runtime and HTTP API: blocking and
 * background children, watch scope, privacy tiers, and a parent's cancel reaching its children.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startFakeOpenAI, textChunks, toolCallChunks, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { harnessSse, startHarness, waitForBus, type Harness } from "../harness.ts";

let h: Harness | undefined;
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

const SCRIPT = `
turns:
  - tool_calls:
      - name: developer__list_dir
        arguments: { path: "." }
  - tool_calls:
      - name: subagent__spawn
        arguments: { instructions: "read the notes" }
  - text: "all done"
subagents:
  - turns:
      - tool_calls: [{ name: developer__read_file, arguments: { path: "notes.txt" } }]
      - text: "child done"
`;

/** The first user message of a request (tells a child's requests from its parent's). */
const firstUser = (body: any) => body.messages.find((m: any) => m.role === "user")?.content as string;
const assistants = (body: any) => body.messages.filter((m: any) => m.role === "assistant").length;
const lastTool = (body: any) => JSON.parse([...body.messages].reverse().find((m: any) => m.role === "tool").content);

describe("loop with the scripted provider", () => {
  test("a root turn lists the workspace, spawns a blocking subagent that reads a file, then answers", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" }, mode: "autonomous" },
      files: { "turns.yaml": SCRIPT },
      workspaceFiles: { "notes.txt": "remember the milk" },
    });
    const s = await h.createSession({ mode: "autonomous" });
    const sse = await harnessSse(h, `/sessions/${s.id}/reply`, { method: "POST", json: { message: "go" } });
    const fin = await sse.waitFor((e) => e.event === "turn_finished");
    expect(fin.data).toMatchObject({ session_id: s.id, status: "completed", answer: "all done" });
    const children = await h.rt.store.listSessions({ parent: s.id });
    expect(children.length).toBe(1);
    const child = children[0]!;
    expect(child).toMatchObject({ parent_session_id: s.id, spawn_index: 0, workspace: h.workspace, mode: "autonomous", headless: false, provider: "scripted", privacy: "public" });
    const results = sse.events.filter((e) => e.event === "tool_result").map((e) => e.data);
    expect(results.map((r) => r.tool)).toEqual(["developer__list_dir", "subagent__spawn"]);
    expect(results[1].result).toEqual({ session_id: child.id, status: "completed", answer: "child done" });
    const childMsgs = await h.rt.store.listMessages(child.id);
    expect(childMsgs[0]).toMatchObject({ role: "user", content: "read the notes" });
    expect(childMsgs.find((m) => m.role === "tool")!.content).toContain("remember the milk");
    expect(h.rt.inflight.size()).toBe(0);
  });

  test("a child inherits headless and cannot change the privacy tier", async () => {
    h = await startHarness({
      config: { provider: { name: "scripted", script: "turns.yaml" } },
      files: {
        "turns.yaml": `
turns:
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "x", privacy: private } }]
  - tool_calls: [{ name: subagent__spawn, arguments: { instructions: "y" } }]
  - text: done
subagents:
  - turns: [{ text: "child y" }]
`,
      },
    });
    const s = await h.createSession({ headless: true });
    const r = await h.rt.runTurn(s.id, "go");
    expect(r.status).toBe("completed");
    const tools = (await h.rt.store.listMessages(s.id)).filter((m) => m.role === "tool");
    expect(JSON.parse(tools[0]!.content).error.code).toBe("privacy_violation");
    expect(JSON.parse(tools[1]!.content)).toMatchObject({ status: "completed", answer: "child y" });
    const [child] = await h.rt.store.listSessions({ parent: s.id });
    expect(child!.headless).toBe(true);
  });
});

describe("background subagents", () => {
  test("spawn with background returns the id at once; watch waits for that child's answer; others' children are refused", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    fake = startFakeOpenAI(async (body) => {
      const who = firstUser(body);
      const n = assistants(body);
      if (who === "child task") {
        await held;
        return textChunks("child answer");
      }
      if (who === "parent task") {
        if (n === 0) return toolCallChunks({ name: "subagent__spawn", arguments: { instructions: "child task", background: true }, id: "c1" });
        if (n === 1) {
          const spawned = lastTool(body);
          release();
          return toolCallChunks({ name: "subagent__watch", arguments: { session_id: spawned.session_id, timeout_s: 30 }, id: "c2" });
        }
        return textChunks(`watched: ${JSON.stringify(lastTool(body))}`);
      }
      // the intruder: tries to watch someone else's child, whose id it was told
      if (n === 0) return toolCallChunks({ name: "subagent__watch", arguments: { session_id: who.split(" ")[1], timeout_s: 1 }, id: "c3" });
      return textChunks(`intruder: ${JSON.stringify(lastTool(body))}`);
    });
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url } } });
    const s = await h.createSession();
    const r = await h.rt.runTurn(s.id, "parent task");
    expect(r.status).toBe("completed");
    const [child] = await h.rt.store.listSessions({ parent: s.id });
    const watched = JSON.parse(r.answer!.slice("watched: ".length));
    expect(watched).toEqual({ session_id: child!.id, status: "completed", answer: "child answer" });
    const other = await h.createSession();
    const r2 = await h.rt.runTurn(other.id, `watch ${child!.id}`);
    expect(JSON.parse(r2.answer!.slice("intruder: ".length)).error.code).toBe("not_found");
  });

  test("cancelling a parent's turn cancels its running child", async () => {
    let childEntered!: () => void;
    const inChild = new Promise<void>((r) => (childEntered = r));
    fake = startFakeOpenAI(async (body) => {
      if (firstUser(body) === "child task") {
        childEntered();
        await new Promise(() => {}); // never answers: only a cancel ends this child
      }
      return toolCallChunks({ name: "subagent__spawn", arguments: { instructions: "child task" }, id: "c1" });
    });
    h = await startHarness({ config: { provider: { name: "openai", base_url: fake.url, max_retries: 0 } } });
    const s = await h.createSession();
    const started = await h.rt.startTurn(s.id, "parent task");
    await inChild;
    const [child] = await h.rt.store.listSessions({ parent: s.id });
    expect(h.rt.inflight.has(child!.id)).toBe(true);
    const res = await h.api(`/sessions/${s.id}/cancel`, { method: "POST" });
    expect(res.status).toBe(200);
    const r = await started.done;
    expect(r.status).toBe("cancelled");
    await waitForBus(h.rt, () => !h!.rt.inflight.has(child!.id));
    expect((await h.rt.store.listTurns(child!.id))[0]!.status).toBe("cancelled");
    expect(h.rt.inflight.size()).toBe(0);
  });
});
