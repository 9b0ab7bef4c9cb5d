/**
 * A small time chart (uPlot): lines over time in a div that follows its container's width.
 * The chart is created once per set of series, fed with setData, resized with a
 * ResizeObserver and destroyed on unmount. For those who cannot see it: the figure has a
 * caption, the drawing an aria-label, and a text summary of the latest values under it.
 */
import uPlot from 'uplot';
import { useEffect, useId, useRef } from 'preact/hooks';

export interface ChartSeries {
  label: string;
  /** Line colour (any CSS colour). */
  color: string;
  /** Series with the same scale share an axis; the first scale is on the left, the second on the right. */
  scale?: string;
  /** How a value reads in the summary, the legend and the axis (default: a grouped number). */
  format?: (value: number) => string;
  dash?: number[];
  /** Line width in CSS pixels (default 2). */
  width?: number;
  /** Whole numbers (counts): the axis of its scale has no fractional ticks. */
  integer?: boolean;
}

export interface ChartProps {
  /** Caption and accessible name. */
  title: string;
  series: ChartSeries[];
  /** The x values: unix time in seconds, ascending. */
  times: number[];
  /** One array per series, as long as `times`; null where a value is missing. */
  values: (number | null)[][];
  height?: number;
  /** What the summary says before the first point. */
  emptyText?: string;
}

const TIME_INCREMENTS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

const COUNT_INCREMENTS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12];

const plain = (v: number) => v.toLocaleString(undefined, { maximumFractionDigits: 2 });

/** The latest value of each series in words, e.g. "At 10:02:03: received 5, imported 3." */
export function chartSummary(series: ChartSeries[], times: number[], values: (number | null)[][], emptyText = 'No data yet.'): string {
  if (times.length === 0) return emptyText;
  const parts = series.map((s, i) => {
    const column = values[i] ?? [];
    let v: number | null = null;
    for (let j = column.length - 1; j >= 0 && v === null; j--) v = column[j] ?? null;
    return `${s.label} ${v === null ? 'unknown' : (s.format ?? plain)(v)}`;
  });
  const at = new Date(times[times.length - 1] * 1000).toLocaleTimeString();
  return `At ${at} (${times.length} ${times.length === 1 ? 'point' : 'points'}): ${parts.join(', ')}.`;
}

function scalesOf(series: ChartSeries[]): string[] {
  const out: string[] = [];
  for (const s of series) {
    const key = s.scale ?? 'y';
    if (!out.includes(key)) out.push(key);
  }
  return out;
}

function options(props: ChartProps, width: number): uPlot.Options {
  const scales = scalesOf(props.series);
  const scaleOpts: uPlot.Scales = { x: { time: true } };
  // Counts start at 0 and a flat line still gets some room above it.
  for (const key of scales) scaleOpts[key] = { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] };
  const first = (key: string) => props.series.find((s) => (s.scale ?? 'y') === key);
  const formatOf = (key: string) => first(key)?.format ?? plain;
  return {
    width,
    height: props.height ?? 220,
    scales: scaleOpts,
    // The legend is the colour key; the values are in the summary under the chart.
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
    series: [
      { label: 'Time' },
      ...props.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: s.width ?? 2,
        scale: s.scale ?? 'y',
        dash: s.dash,
        spanGaps: false,
        points: { show: true, size: 4 },
        value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? '—' : (s.format ?? plain)(v)),
      })),
    ],
    axes: [
      // Whole seconds at least: the points are seconds apart.
      {
        stroke: '#5b6470',
        grid: { stroke: '#e6e9ed' },
        space: 80,
        incrs: TIME_INCREMENTS,
        values: (_u: uPlot, ticks: number[]) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString()),
      },
      ...scales.map((key, i) => ({
        scale: key,
        side: i === 0 ? 3 : 1,
        stroke: '#5b6470',
        grid: { show: i === 0, stroke: '#e6e9ed' },
        size: 60,
        ...(first(key)?.integer ? { incrs: COUNT_INCREMENTS } : {}),
        values: (_u: uPlot, ticks: number[]) => ticks.map((t) => formatOf(key)(t)),
      })),
    ],
  };
}

export function Chart(props: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const propsRef = useRef(props);
  propsRef.current = props;
  const summaryId = useId();
  const data = (): uPlot.AlignedData => [propsRef.current.times, ...propsRef.current.values] as uPlot.AlignedData;
  // A new chart only when the series themselves change (their names, scales or colours).
  const shape = JSON.stringify([props.series.map((s) => [s.label, s.color, s.scale ?? 'y']), props.height ?? 220]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(200, Math.floor(el.clientWidth || 600));
    const u = new uPlot(options(propsRef.current, width()), data(), el);
    plot.current = u;
    let last = width();
    const observer = new ResizeObserver(() => {
      const w = width();
      if (w !== last) {
        last = w;
        u.setSize({ width: w, height: propsRef.current.height ?? 220 });
      }
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data());
  }, [props.times, props.values]);

  const summary = chartSummary(props.series, props.times, props.values, props.emptyText);
  return (
    <figure class="chart" style={{ margin: '0 0 1rem', minWidth: 0 }}>
      <figcaption style={{ fontWeight: 600, marginBottom: '.3rem' }}>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`Chart: ${props.title}`} aria-describedby={summaryId} style={{ width: '100%', overflow: 'hidden' }} />
      <p id={summaryId} class="muted chart-summary" style={{ fontSize: '.85rem', margin: '.3rem 0 0' }}>{summary}</p>
    </figure>
  );
}
