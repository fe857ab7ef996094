/** Building blocks shared by the pages: links, data loading, errors, empty states, forms. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { navigate } from './router.js';

export function Link(props: { href: string; children: ComponentChildren; class?: string }) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return (
    <a href={props.href} onClick={onClick} class={props.class}>
      {props.children}
    </a>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => Promise<void>;
}

/**
 * Loads with `load` now, when `deps` change and, with `pollMs`, again at that interval while
 * the page is visible (a failed poll shows its error and keeps the last data).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    try {
      const value = await loadRef.current();
      setData(value);
      setError(undefined);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setLoading(false);
    }
  }, []);
  useEffect(() => {
    setLoading(true);
    setData(undefined);
    void reload();
    if (pollMs === undefined) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, pollMs);
    return () => clearInterval(timer);
  }, deps);
  return { data, error, loading, reload };
}

export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(0, 'client_error', err instanceof Error ? err.message : String(err));
}

export function ErrorBox(props: { error: ApiError | undefined; title?: string }) {
  if (props.error === undefined) return null;
  return (
    <div class="error" role="alert">
      <strong>{props.title ?? 'Something went wrong'}</strong>
      <p>{props.error.message}</p>
      {props.error.code !== '' && (
        <p class="muted small">
          code <code>{props.error.code}</code>
          {props.error.status > 0 && <> · HTTP {props.error.status}</>}
        </p>
      )}
    </div>
  );
}

export function Notice(props: { text: string | undefined }) {
  if (props.text === undefined) return null;
  return (
    <div class="notice" role="status">
      {props.text}
    </div>
  );
}

export function Empty(props: { title: string; children: ComponentChildren }) {
  return (
    <div class="empty">
      <strong>{props.title}</strong>
      <div>{props.children}</div>
    </div>
  );
}

export function Loading() {
  return (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  );
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge status-${props.status}`}>{props.status}</span>;
}

/**
 * A URL on one line: cut with an ellipsis where it does not fit, never broken inside a word;
 * the whole URL is in its tooltip (and in the Copy button beside it, where there is one).
 */
export function UrlText(props: { url: string; muted?: boolean }) {
  return (
    <code class={props.muted === true ? 'url-text muted' : 'url-text'} title={props.url}>
      {props.url}
    </code>
  );
}

export function CopyButton(props: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
    } catch {
      // No clipboard permission (e.g. not a secure context): select-and-copy fallback.
      const area = document.createElement('textarea');
      area.value = props.text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button
      type="button"
      class="small"
      onClick={() => void copy()}
      aria-label={props.label ?? `Copy ${props.text}`}
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

/**
 * Runs an action with a busy state; its error (the API's `{code, message}`) is returned for
 * the page to show.
 */
export function useAction(): {
  busy: string | undefined;
  error: ApiError | undefined;
  run: (label: string, action: () => Promise<void>) => Promise<boolean>;
  clear: () => void;
} {
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const run = async (label: string, action: () => Promise<void>): Promise<boolean> => {
    setBusy(label);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (err) {
      setError(asApiError(err));
      return false;
    } finally {
      setBusy(undefined);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}

export function Field(props: {
  label: string;
  hint?: string | undefined;
  required?: boolean | undefined;
  children: ComponentChildren;
}) {
  return (
    <label class="field">
      <span class="label">
        {props.label}
        {props.required === true && <span class="required"> (required)</span>}
      </span>
      {props.children}
      {props.hint !== undefined && props.hint !== '' && <span class="hint">{props.hint}</span>}
    </label>
  );
}

/**
 * A checkbox with its label, and under it one line saying what it does (the box's
 * description for assistive technology, too).
 */
export function CheckField(props: {
  label: string;
  hint: string;
  checked: boolean;
  disabled?: boolean;
  onChecked: (checked: boolean) => void;
}) {
  const hintId = useId();
  return (
    <div class="field">
      <label class="check">
        <input
          type="checkbox"
          checked={props.checked}
          disabled={props.disabled === true}
          aria-describedby={hintId}
          onChange={(e) => props.onChecked((e.target as HTMLInputElement).checked)}
        />
        {props.label}
      </label>
      <span class="hint" id={hintId}>
        {props.hint}
      </span>
    </div>
  );
}

/** A workload's `autostart`, in the Run and Edit forms (`skep run --no-autostart` unchecks it). */
export function AutostartField(props: { checked: boolean; onChecked: (checked: boolean) => void }) {
  return (
    <CheckField
      label="Resume it when skep serve starts"
      hint="After a reboot, a server that was running comes back when skep serve starts; unchecked, it stays stopped until you start it."
      checked={props.checked}
      onChecked={props.onChecked}
    />
  );
}

export function TextInput(props: {
  value: string;
  onValue: (value: string) => void;
  required?: boolean;
  pattern?: string;
  placeholder?: string;
  id?: string;
}) {
  const { onValue, ...rest } = props;
  return <input type="text" {...rest} onInput={(e) => onValue((e.target as HTMLInputElement).value)} />;
}

export function PageHeader(props: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Skep`;
  }, [props.title]);
  return (
    <div class="page-header">
      <h1>{props.title}</h1>
      {props.children !== undefined && <div class="actions">{props.children}</div>}
    </div>
  );
}

/**
 * `useAction` plus the notice a page shows after a change: `change` clears the old notice, runs
 * the call, and on success shows `done`, runs `after` (e.g. empty the form) and reloads the page's data.
 */
export function useChange(reload: () => Promise<void>) {
  const action = useAction();
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const change = async (
    label: string,
    call: () => Promise<unknown>,
    done: string,
    after?: () => void,
  ): Promise<boolean> => {
    setNotice(undefined);
    if (!(await action.run(label, async () => void (await call())))) return false;
    setNotice(done);
    after?.();
    await reload();
    return true;
  };
  return { busy: action.busy, error: action.error, run: action.run, notice, setNotice, change };
}

/** A table with a header row of `columns`; with `items`, one `row` each, or `empty` when there are none. */
export function DataTable<T>(props: {
  label?: string;
  /** Extra classes of the table (e.g. `stack`: rows become cards on a narrow screen). */
  class?: string;
  columns: string[];
  items: T[] | undefined;
  empty?: ComponentChildren;
  row: (item: T) => ComponentChildren;
}) {
  if (props.items === undefined) return null;
  if (props.items.length === 0) return <>{props.empty}</>;
  return (
    <table class={props.class === undefined ? 'table' : `table ${props.class}`} aria-label={props.label}>
      <thead>
        <tr>
          {props.columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.items.map(props.row)}</tbody>
    </table>
  );
}

/**
 * A row of tabs (`role="tablist"`): a button for each key of `tabs` (its value is the button's
 * text); the `selected` one is marked, the others are ghost buttons.
 */
export function Tabs<T extends string>(props: {
  label: string;
  tabs: Record<T, string>;
  selected: T;
  onSelect: (tab: T) => void;
  small?: boolean;
}) {
  return (
    <div role="tablist" aria-label={props.label}>
      {(Object.keys(props.tabs) as T[]).map((tab) => (
        <button
          key={tab}
          type="button"
          role="tab"
          aria-selected={props.selected === tab}
          class={`${props.small === true ? 'small ' : ''}${props.selected === tab ? '' : 'ghost'}`}
          onClick={() => props.onSelect(tab)}
        >
          {props.tabs[tab]}
        </button>
      ))}
    </div>
  );
}

/** A list of names, or a muted dash when it is empty. */
export function NameList(props: { names: string[] }) {
  return props.names.length === 0 ? <span class="muted">—</span> : <>{props.names.join(', ')}</>;
}

/** A form's submit button (disabled while an action runs), then any further buttons. */
export function FormActions(props: {
  busy: string | undefined;
  submit: ComponentChildren;
  children?: ComponentChildren;
}) {
  return (
    <div class="form-actions">
      <button type="submit" disabled={props.busy !== undefined}>
        {props.submit}
      </button>
      {props.children}
    </div>
  );
}

/** A labelled one-line text input; `required` both marks the label and makes the input required. */
export function TextField(props: {
  label: string;
  hint?: string | undefined;
  required?: boolean;
  pattern?: string;
  value: string;
  onValue: (value: string) => void;
}) {
  const { label, hint, ...input } = props;
  return (
    <Field label={label} hint={hint} required={props.required}>
      <TextInput {...input} />
    </Field>
  );
}

/**
 * The status lines under a page's header: the load's error, the last change's error, the notice
 * of the last change, and "Loading…" while the data loads.
 */
export function PageStatus(props: {
  load: Loaded<unknown>;
  loadError: string;
  change: { error: ApiError | undefined; notice: string | undefined };
  changeError: string;
}) {
  return (
    <>
      <ErrorBox error={props.load.error} title={props.loadError} />
      <ErrorBox error={props.change.error} title={props.changeError} />
      <Notice text={props.change.notice} />
      {props.load.loading && <Loading />}
    </>
  );
}
