/** A form's submit button (which says when the form is busy) and, when there is one, its Cancel. */
export function FormActions({ label, busyLabel, busy = false, onCancel }: { label: string; busyLabel?: string; busy?: boolean; onCancel?: () => void }) {
  return (
    <div class="form-actions">
      <button type="submit" class="button primary" disabled={busy}>
        {busy ? (busyLabel ?? `${label}…`) : label}
      </button>
      {onCancel && (
        <button type="button" class="button secondary" onClick={onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}
