import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { CopyBlock } from "../../components/copy-button.js";
import { Notice } from "../../components/notice.js";

/**
 * A key's secret, shown this once (a new key's, or one regenerated): its title takes the focus as it appears, so a
 * screen reader says it and the keyboard is where the secret is; Done closes it.
 */
export function NewSecret({ id, title, secret, testId, onDone, children, note = "Copy it now. It is shown this once; Makina keeps only its hash.", copyLabel = "Copy key" }: { id: string; title: string; secret: string; testId: string; onDone: () => void; children?: ComponentChildren; note?: string; copyLabel?: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <section class="card panel" aria-labelledby={id} data-testid={testId}>
      <h2 id={id} tabIndex={-1} ref={heading}>
        {title}
      </h2>
      <Notice tone="warn">{note}</Notice>
      <CopyBlock text={secret} label={copyLabel} testId="new-key-secret" />
      {children}
      <div class="form-actions">
        <button type="button" class="button primary" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}
