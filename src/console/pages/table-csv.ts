/**
 * A small RFC 4180 CSV parser for the data preview (GET .../data-preview answers CSV with a
 * header row): comma-separated fields, fields in double quotes may hold commas, quotes ("")
 * and line breaks; records end with CRLF or LF; a final line break ends the last record.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  // Whether anything of the current record has been read (an empty last line is no record).
  let started = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"') {
      quoted = true;
      started = true;
      i++;
    } else if (c === ',') {
      record.push(field);
      field = '';
      started = true;
      i++;
    } else if (c === '\r' || c === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      started = false;
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
    } else {
      field += c;
      started = true;
      i++;
    }
  }
  if (started || quoted) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/** An SQL identifier in double quotes ("in.c-events"."raw"). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
