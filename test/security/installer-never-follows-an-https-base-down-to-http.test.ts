/**
 * @module test/security/installer-never-follows-an-https-base-down-to-http.test
 * scripts/install.sh given an HTTPS base URL (a Bun.serve TLS server on loopback, its self-signed
 * certificate trusted through CURL_CA_BUNDLE / WGETRC's ca_certificate) that redirects every file to a
 * plain-HTTP server serving a forged binary with a matching SHA256SUMS. The security model's answer to
 * "an attacker who controls the folder" is "serve it over HTTPS"; a redirect to http:// hands both files
 * to anyone on the path, so the installer must refuse it. Run as root and as an unprivileged user.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sharedTempDir, type TestUser, testUsers } from "../as-user.ts";
import { toolsDir } from "../tools-dir.ts";

const INSTALL = join(import.meta.dir, "..", "..", "scripts", "install.sh");
const BIN = "airlock-linux-x64";
const FORGED = "#!/bin/sh\necho forged\n";
let tlsServer: ReturnType<typeof Bun.serve>;
let plainServer: ReturnType<typeof Bun.serve>;
let certDir = "";

beforeAll(async () => {
  certDir = sharedTempDir("airlock-cert-");
  const gen = Bun.spawn(
    ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(certDir, "key.pem"), "-out", join(certDir, "cert.pem"),
      "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    { stdout: "ignore", stderr: "ignore" },
  );
  expect(await gen.exited).toBe(0);
  for (const f of ["key.pem", "cert.pem"]) chmodSync(join(certDir, f), 0o644);
  writeFileSync(join(certDir, "wgetrc"), `ca_certificate = ${join(certDir, "cert.pem")}\n`, { mode: 0o644 });
  const files: Record<string, string> = { [BIN]: FORGED, SHA256SUMS: `${createHash("sha256").update(FORGED).digest("hex")}  ${BIN}\n` };
  plainServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const body = files[new URL(req.url).pathname.split("/").pop() ?? ""];
      return body === undefined ? new Response("not found", { status: 404 }) : new Response(body);
    },
  });
  tlsServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { key: Bun.file(join(certDir, "key.pem")), cert: Bun.file(join(certDir, "cert.pem")) },
    fetch(req) {
      const { pathname } = new URL(req.url);
      // /ok/: a redirect that stays on https (as release hosts do), to /real/ serving the same files.
      if (pathname.startsWith("/ok/")) return Response.redirect(`https://127.0.0.1:${tlsServer.port}/real/${pathname.slice(4)}`, 302);
      const body = pathname.startsWith("/real/") ? files[pathname.slice(6)] : undefined;
      if (body !== undefined) return new Response(body);
      return Response.redirect(`http://127.0.0.1:${plainServer.port}${pathname}`, 302);
    },
  });
}, 120_000);

afterAll(() => {
  tlsServer?.stop(true);
  plainServer?.stop(true);
});

describe.each(testUsers())("scripts/install.sh, run as $name", (user: TestUser) => {
  for (const [tool, without] of [["curl", "wget"], ["wget", "curl"]] as const) {
    const run = async (folder = "rel") => {
      const prefix = sharedTempDir("airlock-prefix-");
      const proc = Bun.spawn([...user.prefix, "/bin/sh", INSTALL, "--prefix", prefix, `https://127.0.0.1:${tlsServer.port}/${folder}`], {
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: toolsDir({ without }), HOME: prefix, CURL_CA_BUNDLE: join(certDir, "cert.pem"), WGETRC: join(certDir, "wgetrc") },
      });
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      const bin = join(prefix, "bin", "airlock");
      return { code, stderr, installed: existsSync(bin) ? readFileSync(bin, "utf8") : null };
    };
    test(`with ${tool}: refuses an https:// base that redirects to http://, installs nothing`, async () => {
      const r = await run();
      expect(r.installed).toBeNull();
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("nothing installed");
      // A redirect that stays on https still installs.
      const ok = await run("ok");
      expect(ok.code).toBe(0);
      expect(ok.installed).toBe(FORGED);
    }, 120_000);
  }
});
