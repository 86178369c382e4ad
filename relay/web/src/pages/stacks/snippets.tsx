import { useState } from "preact/hooks";
import type { Stack } from "../../api/types.js";
import { CopyBlock } from "../../components/copy-button.js";
import { TabList } from "../../components/tab-list.js";

const LANGUAGES = [
  { value: "curl", label: "curl" },
  { value: "python", label: "Python" },
  { value: "javascript", label: "JavaScript" },
] as const;

type Language = (typeof LANGUAGES)[number]["value"];

const APIS = [
  { value: "chat", label: "Chat completions" },
  { value: "embeddings", label: "Embeddings" },
  { value: "responses", label: "Responses" },
  { value: "messages", label: "Anthropic Messages" },
  { value: "rerank", label: "Rerank" },
] as const;

type Api = (typeof APIS)[number]["value"];

/** Rerank calls: no vendor SDK takes a base URL for it, so plain HTTP (vLLM's, Jina's and Cohere's shape). */
function rerankSnippets(m: string, b: string, shellModel: string): Record<Language, string> {
  const url = JSON.stringify(`${b.slice(1, -1)}/rerank`);
  return {
    curl: `curl ${b.slice(1, -1)}/rerank \\
  -H "Authorization: Bearer $MAKINA_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${shellModel}, "query": "What is a GPU?", "documents": ["A GPU renders graphics and runs models.", "Bread is baked from flour."], "top_n": 1}'`,
    python: `import os

import requests

reply = requests.post(
    ${url},
    headers={"Authorization": f"Bearer {os.environ['MAKINA_API_KEY']}"},
    json={
        "model": ${m},
        "query": "What is a GPU?",
        "documents": ["A GPU renders graphics and runs models.", "Bread is baked from flour."],
        "top_n": 1,
    },
)
print(reply.json()["results"])`,
    javascript: `const reply = await fetch(${url}, {
  method: "POST",
  headers: { Authorization: \`Bearer \${process.env.MAKINA_API_KEY}\`, "Content-Type": "application/json" },
  body: JSON.stringify({
    model: ${m},
    query: "What is a GPU?",
    documents: ["A GPU renders graphics and runs models.", "Bread is baked from flour."],
    top_n: 1,
  }),
});
console.log((await reply.json()).results);`,
  };
}

/** Each API's call of a model, in each language: `m` is the model id and `b` the base URL, both as string literals. */
function snippetsOf(api: Api, m: string, b: string, origin: string, shellModel: string): Record<Language, string> {
  switch (api) {
    case "rerank":
      return rerankSnippets(m, b, shellModel);
    case "chat":
      return {
        curl: `curl ${b.slice(1, -1)}/chat/completions \\
  -H "Authorization: Bearer $MAKINA_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${shellModel}, "messages": [{"role": "user", "content": "Hello!"}]}'`,
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
    case "embeddings":
      return {
        curl: `curl ${b.slice(1, -1)}/embeddings \\
  -H "Authorization: Bearer $MAKINA_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${shellModel}, "input": ["first text", "second text"]}'`,
        python: `import os

from openai import OpenAI

client = OpenAI(base_url=${b}, api_key=os.environ["MAKINA_API_KEY"])
result = client.embeddings.create(model=${m}, input=["first text", "second text"])
print([len(d.embedding) for d in result.data])`,
        javascript: `import OpenAI from "openai";

const client = new OpenAI({ baseURL: ${b}, apiKey: process.env.MAKINA_API_KEY });
const result = await client.embeddings.create({ model: ${m}, input: ["first text", "second text"] });
console.log(result.data.map((d) => d.embedding.length));`,
      };
    case "responses":
      return {
        curl: `curl ${b.slice(1, -1)}/responses \\
  -H "Authorization: Bearer $MAKINA_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${shellModel}, "input": "Hello!"}'`,
        python: `import os

from openai import OpenAI

client = OpenAI(base_url=${b}, api_key=os.environ["MAKINA_API_KEY"])
response = client.responses.create(model=${m}, input="Hello!")
print(response.output_text)`,
        javascript: `import OpenAI from "openai";

const client = new OpenAI({ baseURL: ${b}, apiKey: process.env.MAKINA_API_KEY });
const response = await client.responses.create({ model: ${m}, input: "Hello!" });
console.log(response.output_text);`,
      };
    case "messages":
      return {
        curl: `curl ${origin}/v1/messages \\
  -H "x-api-key: $MAKINA_API_KEY" \\
  -H "anthropic-version: 2023-06-01" \\
  -H "Content-Type: application/json" \\
  -d '{"model": ${shellModel}, "max_tokens": 256, "messages": [{"role": "user", "content": "Hello!"}]}'`,
        python: `import os

from anthropic import Anthropic

client = Anthropic(base_url=${JSON.stringify(origin)}, api_key=os.environ["MAKINA_API_KEY"])
message = client.messages.create(
    model=${m},
    max_tokens=256,
    messages=[{"role": "user", "content": "Hello!"}],
)
print(message.content[0].text)`,
        javascript: `import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ baseURL: ${JSON.stringify(origin)}, apiKey: process.env.MAKINA_API_KEY });
const message = await client.messages.create({
  model: ${m},
  max_tokens: 256,
  messages: [{ role: "user", content: "Hello!" }],
});
console.log(message.content[0].text);`,
      };
  }
}

/** Ready-to-paste calls of this stack, through each API it answers, with curl and the vendors' SDKs, pointed at this gateway. */
export function Snippets({ stack }: { stack: Stack }) {
  const [language, setLanguage] = useState<Language>("curl");
  const serves = stack.compatibility.serves;
  const apis = APIS.filter((a) => (a.value === "embeddings" || a.value === "rerank" ? serves.includes(a.value) : serves.includes("chat")));
  const [chosen, setApi] = useState<Api>(apis[0]?.value ?? "chat");
  const api = apis.some((a) => a.value === chosen) ? chosen : (apis[0]?.value ?? "chat");
  // Pasted as a string literal each language reads as it is (JSON's is Python's and JavaScript's too), and in
  // the shell's single quotes with any quote of its own closed and reopened (a stack stored before the model
  // id's rule may have one).
  const m = JSON.stringify(stack.model_id);
  const b = JSON.stringify(`${location.origin}/v1`);
  const snippets = snippetsOf(api, m, b, location.origin, m.replaceAll("'", "'\\''"));
  return (
    <section class="card" aria-labelledby="snippets-title">
      <h2 id="snippets-title">Call it from your code</h2>
      <TabList id="snippet-api" label="API" tabs={apis} value={api} onChange={setApi}>
        <TabList id="snippet" label="Language" tabs={LANGUAGES} value={language} onChange={setLanguage}>
          <CopyBlock text={snippets[language]} testId={`snippet-${language}`} />
        </TabList>
      </TabList>
      <p class="hint">
        Set MAKINA_API_KEY to a key from the API keys page. Nothing else changes from the vendor's SDK
        {serves.includes("chat")
          ? serves.includes("embeddings")
            ? "."
            : ". This stack answers chats only: it has no embeddings."
          : serves.includes("rerank")
            ? ". Its model is a reranker: it answers rerank requests only (the shape vLLM, Jina and Cohere clients send)."
            : ". Its model is an embedding model: it answers embeddings only."}
      </p>
    </section>
  );
}
