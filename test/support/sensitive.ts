/**
 * Scanners for member data in clear: Luhn-valid card numbers and SSNs. Used on database dumps and on
 * the logs every test harness captures.
 */

/** True for a digit string that passes the Luhn check. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

/** Luhn-valid runs of 13–19 digits standing alone (not inside hex, identifiers, longer numbers or decimal fractions). */
export function clearPans(text: string): string[] {
  return [...text.matchAll(/(?<![0-9A-Za-z.])\d{13,19}(?![0-9A-Za-z])/g)].map((m) => m[0]).filter(luhnValid);
}

/** SSNs written with dashes, or any of the given clear SSNs in any form. */
export function clearSsns(text: string, known: Iterable<string> = []): string[] {
  const dashed = [...text.matchAll(/(?<![0-9])\d{3}-\d{2}-\d{4}(?![0-9])/g)].map((m) => m[0]);
  const found = [...known].filter((ssn) => new RegExp(`(?<![0-9])${ssn}(?![0-9])`).test(text));
  return [...dashed, ...found];
}

/** Log lines without the fields that are numbers by nature (epoch time, pid, port, response time). */
export function scrubLogNoise(lines: readonly string[]): string {
  return lines
    .map((line) => {
      try {
        const {
          time: _time,
          pid: _pid,
          responseTime: _responseTime,
          ...rest
        } = JSON.parse(line) as Record<string, unknown>;
        return JSON.stringify(rest).replace(/"remotePort":\d+/g, '');
      } catch {
        return line;
      }
    })
    .join('\n');
}
