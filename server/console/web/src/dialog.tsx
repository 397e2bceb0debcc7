import { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";

// Dialog is a modal <dialog>: the browser keeps focus inside it, Escape
// closes it, and focus returns to what opened it.
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    d.showModal();
    return () => { if (d.open) d.close(); opener?.focus(); };
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={onClose} onCancel={onClose}>
      <div class="dialog-head">
        <h2 id="dialog-title">{title}</h2>
        <button type="button" class="close" aria-label="Close dialog" onClick={onClose}>×</button>
      </div>
      {children}
    </dialog>
  );
}
