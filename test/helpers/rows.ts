import type { Db } from '../../src/db/client';

/** Every row of every table, as JSON text: for "appears in no table" checks. */
export async function dumpAllTables(db: Db): Promise<Record<string, string>> {
  const tables = {
    Shop: await db.shop.findMany(),
    Session: await db.session.findMany(),
    Connection: await db.connection.findMany(),
    ShopSettings: await db.shopSettings.findMany(),
    WebhookReceipt: await db.webhookReceipt.findMany(),
    OutboxMessage: await db.outboxMessage.findMany(),
    DeliveryAttempt: await db.deliveryAttempt.findMany(),
    CustomerProfile: await db.customerProfile.findMany(),
    WorkspacePacer: await db.workspacePacer.findMany(),
    DataExport: await db.dataExport.findMany(),
    Backfill: await db.backfill.findMany(),
    ShopDue: await db.shopDue.findMany(),
    OrderSummary: await db.orderSummary.findMany(),
    FulfillmentState: await db.fulfillmentState.findMany(),
    ProductInfo: await db.productInfo.findMany(),
    WebPixel: await db.webPixel.findMany(),
    PixelVisitor: await db.pixelVisitor.findMany(),
    PixelEvent: await db.pixelEvent.findMany(),
    PixelShopper: await db.pixelShopper.findMany(),
    PixelClaim: await db.pixelClaim.findMany(),
    PixelStat: await db.pixelStat.findMany(),
    ReceiptLease: await db.receiptLease.findMany(),
  };
  return Object.fromEntries(
    Object.entries(tables).map(([k, v]) => [k, JSON.stringify(v, (_key, val) => (typeof val === 'bigint' ? val.toString() : val))]),
  );
}

/** Names of the tables whose rows mention `needle`. */
export async function tablesContaining(db: Db, needle: string): Promise<string[]> {
  const all = await dumpAllTables(db);
  return Object.entries(all)
    .filter(([, text]) => text.toLowerCase().includes(needle.toLowerCase()))
    .map(([k]) => k);
}
