import { useState } from "preact/hooks";

/** Copies `text` to the clipboard and says so for two seconds. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied("yes");
    } catch {
      setCopied("failed");
    }
    setTimeout(() => setCopied(null), 2000);
  };
  return (
    <button type="button" class="button small secondary" onClick={copy} aria-live="polite">
      {copied === "yes" ? "Copied" : copied === "failed" ? "Select and copy" : label}
    </button>
  );
}

/** A block of text to paste elsewhere, with its copy button. */
export function CopyBlock({ text, label, testId }: { text: string; label?: string; testId?: string }) {
  return (
    <div class="copy-block">
      <pre data-testid={testId}>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={label} />
    </div>
  );
}
