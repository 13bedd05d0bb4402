import { describe, expect, test } from "bun:test";
import { currentOwner, ownerIsGone, processStart } from "./owner.ts";

describe("owner.ownerIsGone", () => {
  test("this process is alive; an exited child, a reused pid (another start identity) and a row with no pid are gone", async () => {
    const me = currentOwner();
    expect(me.pid).toBe(process.pid);
    expect(me.start).toMatch(/^[0-9a-f-]+:\d+$/);
    expect(ownerIsGone(me)).toBe(false);
    const child = Bun.spawn(["sleep", "60"], { stdout: "ignore", stderr: "ignore" });
    const childOwner = { pid: child.pid, start: processStart(child.pid) };
    expect(ownerIsGone(childOwner)).toBe(false);
    child.kill("SIGKILL");
    await child.exited;
    expect(ownerIsGone(childOwner)).toBe(true);
    expect(ownerIsGone({ pid: process.pid, start: `${me.start}0` })).toBe(true);
    expect(ownerIsGone({ pid: null, start: null })).toBe(true);
  });
});
