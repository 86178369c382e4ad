/** The environment variable through which the agent gives `mlx_lm.server` its key for this start. */
export const MLX_KEY_ENV = "MLX_LM_API_KEY";

/**
 * Python run with `python -c` in MLX's virtual environment in place of the `mlx_lm.server` command: it
 * starts mlx-lm's own server (`mlx_lm.server.main`, with the arguments that follow), having first made every
 * request to it show the key of this start as a bearer token, or get 401. `mlx_lm.server` has no key option
 * of its own, and serves through Python's `http.server`: the check sits in `BaseHTTPRequestHandler.parse_request`,
 * the standard library's step that every request of such a server passes before its handler runs, so it does
 * not depend on mlx-lm's insides. The key is taken out of the environment before mlx-lm starts, so nothing the
 * server runs inherits it. `python -c` would look for modules in the working directory first: that entry is
 * dropped before anything else is imported.
 */
export const MLX_LAUNCHER = `
import sys
if sys.path and sys.path[0] == "":
    sys.path.pop(0)
import hmac, os
from http.server import BaseHTTPRequestHandler

expected = ("Bearer " + os.environ.pop("${MLX_KEY_ENV}")).encode()
parse_request = BaseHTTPRequestHandler.parse_request

def parse_request_with_key(self):
    if not parse_request(self):
        return False
    if hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected):
        return True
    self.send_error(401, "This server answers the Makina agent only")
    return False

BaseHTTPRequestHandler.parse_request = parse_request_with_key
sys.argv = ["mlx_lm.server", *sys.argv[1:]]
from mlx_lm.server import main
main()
`.trim();
