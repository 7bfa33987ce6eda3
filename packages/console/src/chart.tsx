/** A small line chart of a rolling series (SVG, no library: a polyline is all these charts need). */
export function Chart(props: { title: string; points: number[]; format?: (v: number) => string; testId?: string }) {
  const { points } = props;
  const width = 260;
  const height = 70;
  const last = points.at(-1);
  const max = Math.max(1, ...points.map(Math.abs));
  const min = Math.min(0, ...points);
  const span = max - min || 1;
  const step = points.length > 1 ? width / (points.length - 1) : width;
  const line = points.map((v, i) => `${(i * step).toFixed(1)},${(height - ((v - min) / span) * height).toFixed(1)}`);
  const fmt = props.format ?? ((v: number) => String(Math.round(v * 100) / 100));
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>
        <span>{props.title}</span>
        <strong>{last === undefined ? '—' : fmt(last)}</strong>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label={props.title}>
        <polyline points={line.join(' ')} fill="none" stroke="currentColor" stroke-width="2" />
      </svg>
    </figure>
  );
}
