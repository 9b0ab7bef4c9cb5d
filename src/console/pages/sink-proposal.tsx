/**
 * "Propose mapping from recent records" in the new-sink form: asks the API for a mapping
 * proposed from the source's newest records (POST .../sinks/infer; nothing is saved) and hands
 * its columns to the editor, which replaces its columns with them for the user to edit before
 * creating the sink. Below the button: how many records the proposal read, and every field seen
 * with its values' kinds and its column (or why it has none).
 */
import './sink-proposal.css';
import { useState } from 'preact/hooks';
import { api, BRANCH } from '../api';
import { ErrorText } from '../widgets/common';
import type { Column, Signal } from '../../contract/stream-sources';
import type { MappingProposal, ProposedField } from '../../contract/mapping-proposal';

export function ProposeMapping({ sourceId, signals, onColumns }: { sourceId: string; signals: Signal[]; onColumns: (columns: Column[]) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [proposal, setProposal] = useState<MappingProposal | undefined>(undefined);

  const propose = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await api<MappingProposal>('POST', `${BRANCH}/sources/${encodeURIComponent(sourceId)}/sinks/infer`, {
        json: signals.length > 0 ? { signals } : {},
      });
      setProposal(answer);
      if (answer.fields.length > 0) onColumns(answer.columns);
    } catch (err) {
      setProposal(undefined);
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="propose-mapping">
      <div class="actions">
        <button type="button" onClick={propose} disabled={busy}>Propose mapping from recent records</button>
        {busy && <span class="muted" aria-live="polite">Reading the newest records…</span>}
      </div>
      <p class="hint">Reads the source's 100 newest records and replaces the columns below with the receive time and a column per field seen, with its type. Nothing is saved until you create the sink.</p>
      <ErrorText error={error} />
      {proposal && <ProposalSummary proposal={proposal} bySignal={signals.length > 0} />}
    </div>
  );
}

function ProposalSummary({ proposal, bySignal }: { proposal: MappingProposal; bySignal: boolean }) {
  const used = proposal.sampledRecords - proposal.skippedRecords;
  const read = `${proposal.sampledRecords} newest record${proposal.sampledRecords === 1 ? '' : 's'}`;
  if (proposal.fields.length === 0) {
    return (
      <p class="error" role="status">
        {proposal.sampledRecords === 0
          ? 'The source has no records yet: send a few events, then propose again.'
          : `No JSON object among the ${read}${bySignal ? ' of the signals checked' : ''}: nothing to propose. The columns are unchanged.`}
      </p>
    );
  }
  const types = new Map(proposal.columns.map((c) => [c.name, c.dataType]));
  return (
    <div class="proposal">
      <p class="ok" role="status">
        Proposed {proposal.columns.length} columns from {used} of the {read}
        {proposal.skippedRecords > 0 ? ` (${proposal.skippedRecords} skipped: ${bySignal ? 'other signals, or ' : ''}not JSON objects)` : ''}
        {proposal.limitedByBytes ? ', as many as the server reads at once' : ''}. Edit them below, then create the sink.
      </p>
      <details>
        <summary>Fields seen ({proposal.fields.length}{proposal.fieldsTruncated ? ', more left out' : ''})</summary>
        <table class="list proposal-fields" aria-label="Fields seen">
          <thead><tr><th>Path</th><th>Records</th><th>Values</th><th>Column</th><th>Type</th></tr></thead>
          <tbody>
            {proposal.fields.map((f) => (
              <tr key={f.path}>
                <td><code>{f.path}</code></td>
                <td>{f.seen}</td>
                <td>{kinds(f)}</td>
                <td>{f.column !== undefined ? <code>{f.column}</code> : null}{f.note && <span class="hint"> {f.note}</span>}</td>
                <td>{types.get(f.column ?? '') ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

function kinds(field: ProposedField): string {
  return Object.entries(field.types).map(([kind, n]) => `${kind} ${n}`).join(', ');
}
