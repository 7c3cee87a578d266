/**
 * Corporate transfers: the payments a business account originates (to other members, or to its own loan),
 * with their entry, completion and notification details.
 */
import { LOAN_ID, isChecking, type AccountFacts } from './account-facts.js';
import { DATASET_AS_OF, entries, type AccountRecords } from './dataset.js';
import { accountNumberOf, earlierAccount } from './numbering.js';
import { addDays, type Random } from './random.js';

const SETTLEMENT_GL_ACCOUNTS = ['101500-000', '101520-000', '739100-000'] as const;

/**
 * Transfers a business account originated. GlobalSequence = index × 10 + n is unique across the dataset
 * (and fits an integer up to 200 million accounts); the date is the day it was entered.
 */
export function addCorpTransfers(out: AccountRecords, rng: Random, account: AccountFacts): void {
  if (!account.businessName) return;
  const fromShare = account.shares.find(isChecking) ?? account.shares[0];
  if (!fromShare) return;
  const count = rng.int(1, 3);
  for (let n = 1; n <= count; n += 1) {
    const isLoanPayment = rng.chance(0.3);
    const toAccount =
      isLoanPayment || account.index === 1
        ? account.accountNumber
        : accountNumberOf(earlierAccount(rng, account.index, 50));
    const entered = rng.dateBetween('2024-07-01', DATASET_AS_OF);
    const effective = addDays(entered, rng.int(0, 2));
    const enteredTime = rng.timeOfDay(7, 16);
    const cancelled = rng.chance(0.08);
    const amount = rng.money(100, 25_000);
    const interest = isLoanPayment ? Math.round(amount * rng.int(5, 25)) / 100 : 0;
    const memo = isLoanPayment
      ? `LOAN ${LOAN_ID} PAYMENT`
      : rng.pick(['PAYROLL FUNDING', 'VENDOR PAYMENT', 'OWNER DRAW', 'RENT']);
    out.add(
      'CorpTransfer',
      {},
      {
        GlobalSequenceDate: entered,
        GlobalSequence: account.index * 10 + n,
        Type: isLoanPayment ? 2 : 1,
        Status: cancelled ? 3 : 2,
        Amount: amount,
        InterestAmount: interest,
        PrincipalAmount: Math.round((amount - interest) * 100) / 100,
        FromAccount: account.accountNumber,
        FromIdType: 0,
        FromId: fromShare.id,
        FromGlAccount: rng.pick(SETTLEMENT_GL_ACCOUNTS),
        ToAccount: toAccount,
        ToIdType: isLoanPayment ? 1 : 0,
        ToId: isLoanPayment ? LOAN_ID : '0000',
        ToGlAccount: rng.pick(SETTLEMENT_GL_ACCOUNTS),
        EnteredDate: entered,
        EnteredTime: enteredTime,
        EnteredByCorporateUser: rng.int(1, 25),
        EnteredByMemberUser: rng.int(1, 5),
        EnteredValidationMethod: rng.pick(['PASSWORD+OTP', 'HARDWARE TOKEN', 'SMS CODE']),
        EffectiveDate: effective,
        PostDate: effective,
        CompletedDate: effective,
        CompletedTime: Math.min(2359, enteredTime + rng.int(1, 3) * 100),
        CompletedByUser: rng.int(1, 250),
        CompletedReason: cancelled ? 'CANCELLED BY MEMBER' : 'PROCESSED',
        NoticeDate: entered,
        NotificationDate: effective,
        NotificationTime: Math.min(2359, enteredTime + rng.int(3, 6) * 100),
        NotificationMethod: rng.pick([1, 2]),
        NotificationStatus: 1,
        NotificationUser: account.primary.email,
        OriginatorTransactionSeq: rng.int(100_000, 999_999),
        ReceiverTransactionSeq: rng.int(100_000, 999_999),
        OriginatorStatementDesc: `${memo} TO ${toAccount.slice(-4)}`.slice(0, 40),
        ReceiverStatementDesc: `FROM ${account.businessName}`.slice(0, 40),
        Memo: entries('Memo', rng.chance(0.4) ? [memo, `INVOICE ${entered.slice(0, 4)}-${rng.int(100, 999)}`] : [memo]),
      },
    );
  }
}
