import { useState } from "preact/hooks";
import type { UsagePoint } from "../../api/types.js";

/** How many groups get a colour of their own (styles.css's `series-0` to `series-7`); "all others" is grey. */
export const SERIES_COLOURS = 8;

/** A peak rounded up to a scale whose quarters are round numbers of at least 1 (4, 8, 10, 20, 100, 2,000, ...). */
export function niceScale(peak: number): number {
  const rough = Math.max(1, peak / 4);
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough && Number.isInteger(s)) ?? 10 * power;
  return step * 4;
}

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
const whole = (x: number) => x.toLocaleString("en-US");

/** A series' colour class: its own for the busiest, grey for "all others". */
const colourOf = (group: string, index: number) => (group === "other" ? "series-other" : `series-${index % SERIES_COLOURS}`);

/**
 * Stacked bars of a metric per bucket, one colour per group, drawn as SVG (no chart library, no CDN), with a
 * y-axis of round values. Pointing at a bucket, or moving through them with the arrow keys once the chart has
 * the focus, shows its time, its total and each group's part.
 */
export function UsageChart({ series, metric, bucketMs, unit }: { series: { group: string; label: string; points: UsagePoint[] }[]; metric: (p: UsagePoint) => number; bucketMs: number; unit: string }) {
  const [at, setAt] = useState<number | null>(null);
  const buckets = series[0]?.points.length ?? 0;
  const totals = Array.from({ length: buckets }, (_, i) => series.reduce((sum, s) => sum + metric(s.points[i]!), 0));
  const scale = niceScale(Math.max(0, ...totals));
  const width = 720;
  const height = 200;
  const barW = buckets ? width / buckets : width;
  const hourly = bucketMs < 86_400_000;
  const label = (ms: number) => (hourly ? new Date(ms).getHours().toString().padStart(2, "0") + ":00" : new Date(ms).toLocaleDateString(undefined, { month: "short", day: "numeric" }));
  const move = (i: number) => setAt(Math.min(buckets - 1, Math.max(0, i)));
  const onKey = (e: KeyboardEvent) => {
    const step = { ArrowLeft: -1, ArrowRight: 1, Home: -buckets, End: buckets }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    move((at ?? buckets - 1) + step);
  };
  const shown = at === null ? null : { start: series[0]!.points[at]!.start, total: totals[at]!, parts: series.map((s, si) => ({ s, si, v: metric(s.points[at]!) })).filter((p) => p.v > 0) };
  // Beside the bucket, on the side with more room, within the drawing (never over the page's other parts).
  const place = at === null ? {} : at >= buckets / 2 ? { right: `calc(${((buckets - at) / buckets) * 100}% + 6px)` } : { left: `calc(${((at + 1) / buckets) * 100}% + 6px)` };
  return (
    <figure class="chart usage-chart">
      <div class="plot">
        <div class="y-axis" aria-hidden="true">
          {[1, 0.75, 0.5, 0.25, 0].map((f) => (
            <span key={f} style={{ bottom: `${f * 100}%` }}>
              {compact.format(f * scale)}
            </span>
          ))}
        </div>
        <div
          class="bars"
          tabIndex={0}
          role="group"
          aria-label={`${unit} per ${hourly ? "hour" : "day"}, at most ${whole(Math.max(0, ...totals))}: the arrow keys read each ${hourly ? "hour" : "day"}`}
          onKeyDown={onKey}
          onFocus={() => at === null && move(buckets - 1)}
          onBlur={() => setAt(null)}
          onMouseMove={(e) => {
            const box = e.currentTarget.getBoundingClientRect();
            move(Math.floor(((e.clientX - box.left) / box.width) * buckets));
          }}
          onMouseLeave={(e) => e.currentTarget !== document.activeElement && setAt(null)}
        >
          <svg viewBox={`0 0 ${width} ${height}`} aria-hidden="true" preserveAspectRatio="none">
            {[0.25, 0.5, 0.75, 1].map((f) => (
              <line key={f} x1="0" x2={width} y1={height - f * height} y2={height - f * height} class="gridline" />
            ))}
            {at !== null && <rect x={at * barW} y="0" width={barW} height={height} class="hover-column" />}
            {Array.from({ length: buckets }, (_, i) => {
              let y = height;
              return (
                <g key={i}>
                  {series.map((s, si) => {
                    const v = metric(s.points[i]!);
                    if (!v) return null;
                    const h = (v / scale) * height;
                    y -= h;
                    return <rect key={s.group} x={i * barW + 1} y={y} width={Math.max(1, barW - 2)} height={h} class={colourOf(s.group, si)} />;
                  })}
                </g>
              );
            })}
          </svg>
          {shown && (
            <div class="readout" style={place} role="status" data-testid="chart-readout">
              <strong>
                {hourly ? `${label(shown.start)}–${label(shown.start + bucketMs)}` : label(shown.start)}: {whole(shown.total)} {unit}
              </strong>
              {shown.parts.map(({ s, si, v }) => (
                <span key={s.group}>
                  <span class={`swatch ${colourOf(s.group, si)}`} aria-hidden="true" />
                  {s.label}: {whole(v)}
                </span>
              ))}
            </div>
          )}
        </div>
      </div>
      {/* The times in HTML under the bars: the drawing stretches to its width, the text keeps its shape at any width. */}
      <div class="axis" aria-hidden="true">
        {Array.from({ length: buckets }, (_, i) => i)
          .filter((i) => i % Math.ceil(buckets / 6) === 0)
          .map((i) => (
            <span key={i} style={{ left: `${(i / buckets) * 100}%` }}>
              {label(series[0]!.points[i]!.start)}
            </span>
          ))}
      </div>
      <figcaption class="legend">
        {series.map((s, si) => (
          <span key={s.group} data-testid="legend-entry">
            <span class={`swatch ${colourOf(s.group, si)}`} aria-hidden="true" />
            {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
