import { useLive } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";
import { Loading, NotLoaded } from "../../components/notice.js";
import { ForgePage } from "./forge-page.js";

/** A stack in the Forge, its fields as they are, to change it. */
export function StackEditPage({ id }: { id: string }) {
  const { client } = useApp();
  // Read once: the form starts from the stack as it was when the page opened.
  const stack = useLive(() => client.call("GET /admin/v1/stacks/:id", { params: { id } }), [], [id]);
  if (stack.error && !stack.data) return <NotLoaded thing="stack" error={stack.error} back="/stacks" />;
  if (!stack.data) return <Loading thing="stack" />;
  return <ForgePage editing={stack.data} />;
}
