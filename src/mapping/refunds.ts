// refunds/create → order_refunded. The refund payload names its order but carries no email.
import { assemble, ignored } from './build';
import { chooseEmail, profileContact } from './contact';
import { firstIso, id, money, obj, objectId, objs, str, sumMoney, type Obj } from './read';
import type { MapInput, MapOutput } from './types';

/** Money actually returned: successful refund transactions; else the refunded lines' subtotals. */
export function refundAmount(refund: Obj): number {
  const paid = objs(refund.transactions).filter((t) => str(t.kind) === 'refund' && str(t.status) === 'success');
  const amounts = paid.length > 0 ? paid.map((t) => money(t.amount)) : objs(refund.refund_line_items).map((r) => money(r.subtotal));
  return sumMoney(amounts.filter((a): a is number => a !== null));
}

function currencyOf(refund: Obj): string | null {
  for (const t of objs(refund.transactions)) {
    const c = str(t.currency);
    if (c) return c;
  }
  for (const r of objs(refund.refund_line_items)) {
    const c = str(obj(obj(r.subtotal_set)?.shop_money)?.currency_code);
    if (c) return c;
  }
  return null;
}

export function mapRefundCreated(input: MapInput): MapOutput {
  const refund = obj(input.payload);
  if (!refund || objectId(refund) === null) return ignored('payload is not a refund');
  const order = obj(refund.order);
  const customer = obj(refund.customer) ?? obj(order?.customer);
  // Some shapes embed the order or customer; otherwise the intake supplies the order's last known email.
  const { email, unusable } = chooseEmail(refund.email, order?.email, customer?.email, input.orderEmail);
  const orderId = id(refund.order_id) ?? objectId(order);
  return assemble(
    input,
    {
      email,
      unusableEmail: unusable,
      noEmail: 'no email on the refund',
      customerId: objectId(customer) ?? input.order?.customerId ?? null,
      checkoutToken: null,
      orderId,
      contact: profileContact(input.profile, email, input.settings),
    },
    [
      {
        eventName: 'order_refunded',
        sourceId: input.webhookId,
        occurredAt: firstIso(refund.created_at, refund.processed_at) ?? input.receivedAt.toISOString(),
        attributes: {
          order_id: orderId,
          refund_id: objectId(refund),
          refund_amount: refundAmount(refund),
          currency: currencyOf(refund),
        },
      },
    ],
  );
}
