/**
 * How the reports write numbers: about three significant digits, and a spread over runs as
 * `median (min–max)`.
 */
import type { Spread } from './stats.js';

/** A number with about three significant digits; '–' when it does not apply. */
export function fmt(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1 || value === 0) return value.toFixed(2).replace(/\.00$/, '');
  return value.toFixed(3);
}

/** `median (min–max)`, or just the median when every run agreed. */
export function cell(s: Spread | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s.median)) return '–';
  if (fmt(s.min) === fmt(s.max)) return fmt(s.median);
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
}
