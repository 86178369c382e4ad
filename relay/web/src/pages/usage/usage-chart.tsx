import type { UsagePoint } from "../../api/types.js";

/** Stacked bars of a metric per bucket, one colour per group, drawn as SVG (no chart library, no CDN). */
export function UsageChart({ series, metric, bucketMs }: { series: { group: string; label: string; points: UsagePoint[] }[]; metric: (p: UsagePoint) => number; bucketMs: number }) {
  const buckets = series[0]?.points.length ?? 0;
  const totals = Array.from({ length: buckets }, (_, i) => series.reduce((sum, s) => sum + metric(s.points[i]!), 0));
  const max = Math.max(1, ...totals);
  const width = 720;
  const height = 200;
  const barW = buckets ? width / buckets : width;
  const label = (ms: number) => (bucketMs < 86_400_000 ? new Date(ms).getHours().toString().padStart(2, "0") + ":00" : new Date(ms).toLocaleDateString(undefined, { month: "short", day: "numeric" }));
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`Peak ${max.toLocaleString("en-US")} per bucket`} preserveAspectRatio="none">
        {[0.25, 0.5, 0.75, 1].map((f) => (
          <line key={f} x1="0" x2={width} y1={height - f * height} y2={height - f * height} class="gridline" />
        ))}
        {Array.from({ length: buckets }, (_, i) => {
          let y = height;
          return (
            <g key={i}>
              {series.map((s, si) => {
                const v = metric(s.points[i]!);
                if (!v) return null;
                const h = (v / max) * height;
                y -= h;
                return (
                  <rect key={s.group} x={i * barW + 1} y={y} width={Math.max(1, barW - 2)} height={h} class={`series-${si % 6}`}>
                    <title>{`${s.label}: ${v.toLocaleString("en-US")} (${label(s.points[i]!.start)})`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
      </svg>
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
          <span key={s.group}>
            <span class={`swatch series-${si % 6}`} aria-hidden="true" />
            {s.label}
          </span>
        ))}
        <span class="muted">peak {max.toLocaleString("en-US")}</span>
      </figcaption>
    </figure>
  );
}
