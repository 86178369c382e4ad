import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { findInstallDir } from "../../relay/http/install/install-files.js";
import { findWebDir } from "../../relay/http/web/web-app.js";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

// The install script (run as root on joining machines) and the web application are served only from where the
// build puts them (`npm test` builds first), never from a directory found by walking up from the relay's code.
it("serves the web application and the install files from the build's own directories only", () => {
  expect(findWebDir()).toBe(join(repoRoot, "dist", "web"));
  expect(findInstallDir()).toBe(join(repoRoot, "dist", "install"));
});
