import { useState } from "preact/hooks";
import type { Stack } from "../../api/types.js";
import { CopyBlock } from "../../components/copy-button.js";
import { TabList } from "../../components/tab-list.js";

const LANGUAGES = [
  { value: "curl", label: "curl" },
  { value: "python", label: "Python" },
  { value: "javascript", label: "JavaScript" },
] as const;

/** Ready-to-paste calls of this stack with curl and the `openai` SDKs, pointed at this gateway. */
export function Snippets({ stack }: { stack: Stack }) {
  const base = `${location.origin}/v1`;
  const [tab, setTab] = useState<(typeof LANGUAGES)[number]["value"]>("curl");
  // Pasted as a string literal each language reads as it is (JSON's is Python's and JavaScript's too), and in
  // the shell's single quotes with any quote of its own closed and reopened (a stack stored before the model
  // id's rule may have one).
  const m = JSON.stringify(stack.model_id);
  const b = JSON.stringify(base);
  const snippets = {
    curl: `curl ${base}/chat/completions \\
  -H "Authorization: Bearer $MAKINA_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${m.replaceAll("'", "'\\''")}, "messages": [{"role": "user", "content": "Hello!"}]}'`,
    python: `import os

from openai import OpenAI

client = OpenAI(base_url=${b}, api_key=os.environ["MAKINA_API_KEY"])
reply = client.chat.completions.create(
    model=${m},
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`,
    javascript: `import OpenAI from "openai";

const client = new OpenAI({ baseURL: ${b}, apiKey: process.env.MAKINA_API_KEY });
const reply = await client.chat.completions.create({
  model: ${m},
  messages: [{ role: "user", content: "Hello!" }],
});
console.log(reply.choices[0].message.content);`,
  };
  return (
    <section class="card" aria-labelledby="snippets-title">
      <h2 id="snippets-title">Call it from your code</h2>
      <TabList id="snippet" label="Language" tabs={LANGUAGES} value={tab} onChange={setTab}>
        <CopyBlock text={snippets[tab]} testId={`snippet-${tab}`} />
      </TabList>
      <p class="hint">Set MAKINA_API_KEY to a key from the API keys page. Nothing else changes from the vendor's SDK.</p>
    </section>
  );
}
