/**
 * Session management on the persistent family (`/gw/627/persistent/usermanagement/logon|logoff`):
 * `logon` trades UserNumberCredentials for a TokenId that later calls present as TokenCredentials, so
 * the password is checked once; the session ends at `logoff` or after 15 idle minutes. A session belongs
 * to the bearer token that logged on: under another token its TokenId is refused like an unknown one.
 */
import { Type } from 'typebox';
import { sessions } from '../store/access.js';
import { defineOperation } from './types.js';

export const logon = defineOperation({
  name: 'logon',
  family: 'P1',
  service: 'usermanagement',
  summary: 'Start a session with UserNumberCredentials; returns the TokenId for TokenCredentials',
  credentials: ['UserNumberCredentials'],
  fixedCredentials: true,
  request: {},
  response: Type.Object(
    {
      TokenId: Type.String({ description: 'Send as Credentials.TokenCredentials.TokenId; shown once' }),
      MessageId: Type.String(),
    },
    { additionalProperties: false },
  ),
  async handle({ db, caller }) {
    return { TokenId: await sessions.create(db, caller.userNumber, caller.tokenName), MessageId: 'logon' };
  },
});

export const logoff = defineOperation({
  name: 'logoff',
  family: 'P1',
  service: 'usermanagement',
  summary: 'End the session of the TokenCredentials given',
  credentials: ['TokenCredentials'],
  fixedCredentials: true,
  request: {},
  response: Type.Object({ MessageId: Type.String() }, { additionalProperties: false }),
  async handle({ db, caller }, body) {
    // TokenCredentials is the only kind logoff accepts, and the caller verified it (the authenticator).
    await sessions.end(db, String(body.Credentials.TokenCredentials?.TokenId), caller.tokenName);
    return { MessageId: 'logoff' };
  },
});

export const SESSION_OPERATIONS = [logon, logoff];
