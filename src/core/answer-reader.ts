/**
 * A core's answer read into an XML tree as it arrives (transport.ts hands over each chunk). An ordinary
 * answer is kept until its end and read at once by `parseXml` (the scanner's fast path); once an answer
 * passes `STREAMED_FROM_BYTES` it is parsed piece by piece instead (`XmlStreamReader`), so that a large one
 * costs the event loop a chunk at a time and memory only what is kept: at most `maxRepeats` children of one
 * name under an element, one more than the longest list the gateway answers.
 */
import { StringDecoder } from 'node:string_decoder';
import { parseXml, XmlStreamReader, type XmlElement, type XmlLimits } from '../symxchange/xml.js';
import type { AnswerReader } from './transport.js';

/** Past this size an answer is parsed as it arrives: what an ordinary answer (a record, a page) stays under. */
export const STREAMED_FROM_BYTES = 64 * 1024;

/**
 * The reader of one SOAP answer; its end is the document's root. Throws the parser's SoapCodecError at the
 * first refusal (malformed, a DTD, past a limit), as the chunk that carries it arrives.
 * @example const reader = xmlAnswerReader(limits, 1001); reader.write(chunk); const root = reader.end();
 */
export function xmlAnswerReader(limits: XmlLimits, maxRepeats: number): AnswerReader<XmlElement> {
  const kept: Buffer[] = [];
  let size = 0;
  let stream: { readonly text: StringDecoder; readonly xml: XmlStreamReader } | undefined;
  return {
    write(chunk) {
      if (stream) return stream.xml.write(stream.text.write(chunk));
      kept.push(chunk);
      size += chunk.length;
      if (size <= STREAMED_FROM_BYTES) return;
      stream = { text: new StringDecoder('utf8'), xml: new XmlStreamReader(limits, { maxRepeats }) };
      for (const piece of kept.splice(0)) stream.xml.write(stream.text.write(piece));
    },
    end() {
      if (!stream) return parseXml(Buffer.concat(kept).toString('utf8'), limits);
      stream.xml.write(stream.text.end());
      return stream.xml.close();
    },
  };
}
