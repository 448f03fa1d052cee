// One labelled clock (jobs/clock.py). Tells the server the browser's time zone (a cookie, used when the person
// has not chosen one under Preferences), and writes times in the page's zone — <body data-time-zone> — the way
// the server does: 24-hour, labelled, "2026-11-25 21:24:52 CET". Loaded in <head> on every page.
(function () {
  "use strict";
  const COOKIE = "benchweb_tz";
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (browserZone && /^[A-Za-z0-9/_+-]+$/.test(browserZone) && !document.cookie.split("; ").includes(COOKIE + "=" + browserZone)) {
    document.cookie = COOKIE + "=" + browserZone + "; path=/; max-age=31536000; SameSite=Lax";
  }

  const formatters = new Map();
  function formatter(zone) {
    if (!formatters.has(zone)) {
      formatters.set(zone, new Intl.DateTimeFormat("en-US", {
        timeZone: zone, hourCycle: "h23", weekday: "short", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit",
      }));
    }
    return formatters.get(zone);
  }

  function zone() {
    return (document.body && document.body.dataset.timeZone) || "UTC";
  }

  // The wall-clock fields of an instant in the page's zone.
  function parts(ms) {
    const out = {};
    for (const p of formatter(zone()).formatToParts(new Date(ms))) out[p.type] = p.value;
    return {
      year: Number(out.year), month: Number(out.month), day: Number(out.day), weekday: out.weekday,
      hour: Number(out.hour) % 24, minute: Number(out.minute), second: Number(out.second),
    };
  }

  function offsetMinutes(ms) {
    const p = parts(ms);
    const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
    return Math.round((wall - Math.floor(ms / 1000) * 1000) / 60000);
  }

  // The instant a wall-clock time in the page's zone names (the earlier one when a clock change repeats it).
  function fromWall(year, month, day, hour = 0, minute = 0, second = 0, millisecond = 0) {
    const wall = Date.UTC(year, month - 1, day, hour, minute, second, millisecond);
    const guess = wall - offsetMinutes(wall) * 60000;
    return wall - offsetMinutes(guess) * 60000;
  }

  let labels = null;
  // The zone's abbreviation as the server writes it (the page lists them per offset), else UTC+hh:mm.
  function label(ms) {
    if (!labels) labels = JSON.parse((document.body && document.body.dataset.zoneLabels) || "{}");
    const offset = offsetMinutes(ms);
    if (labels[offset]) return labels[offset];
    if (offset === 0) return "UTC";
    const abs = Math.abs(offset);
    return "UTC" + (offset < 0 ? "-" : "+") + String(Math.floor(abs / 60)).padStart(2, "0") + ":" + String(abs % 60).padStart(2, "0");
  }

  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const pad = (n) => String(n).padStart(2, "0");

  // A small subset of date-fns' tokens: yyyy MMM MM dd d EEE HH mm ss z (the zone's label).
  function format(ms, pattern) {
    const p = parts(ms);
    const tokens = {
      yyyy: () => String(p.year), MMM: () => MONTHS[p.month - 1], MM: () => pad(p.month), dd: () => pad(p.day),
      d: () => String(p.day), EEE: () => p.weekday, HH: () => pad(p.hour), mm: () => pad(p.minute),
      ss: () => pad(p.second), z: () => label(ms),
    };
    return pattern.replace(/yyyy|MMM|MM|dd|d|EEE|HH|mm|ss|z/g, (token) => tokens[token]());
  }

  const PATTERNS = { seconds: "yyyy-MM-dd HH:mm:ss z", minutes: "yyyy-MM-dd HH:mm z", time: "HH:mm:ss z" };

  window.benchClock = {
    zone,
    parts,
    fromWall,
    label,
    format,
    // "2026-11-25 21:24:52 CET"; precision "minutes" drops the seconds, "time" the date.
    show: (ms, precision = "seconds") => format(ms, PATTERNS[precision]),
    // A date-and-time field's value ("2026-11-25 21:24", 24-hour: jobs/widgets.py) and back, in the page's zone
    // rather than the browser's.
    toInput: (ms) => format(ms, "yyyy-MM-dd HH:mm"),
    fromInput(value) {
      const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})/.exec(value || "");
      return m ? fromWall(+m[1], +m[2], +m[3], +m[4], +m[5]) : NaN;
    },
  };
})();
