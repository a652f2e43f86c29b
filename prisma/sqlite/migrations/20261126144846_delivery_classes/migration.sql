-- CreateTable
CREATE TABLE "DeliveryUsage" (
    "shopId" TEXT NOT NULL,
    "hour" DATETIME NOT NULL,
    "eventName" TEXT NOT NULL,
    "deliveryClass" INTEGER NOT NULL,
    "sends" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,

    PRIMARY KEY ("shopId", "hour", "eventName"),
    CONSTRAINT "DeliveryUsage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_OutboxMessage" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "sourceId" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'event',
    "topic" TEXT NOT NULL,
    "eventName" TEXT NOT NULL,
    "deliveryClass" INTEGER NOT NULL DEFAULT 0,
    "email" TEXT,
    "customerId" TEXT,
    "checkoutToken" TEXT,
    "orderId" TEXT,
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "heldReason" TEXT,
    "runAt" DATETIME NOT NULL,
    "dueAt" DATETIME NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "sends" INTEGER NOT NULL DEFAULT 0,
    "lockedBy" TEXT,
    "lockedUntil" DATETIME,
    "lastError" TEXT,
    "lastStatus" INTEGER,
    "latencyMs" BIGINT,
    "backfillId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "OutboxMessage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
-- the live/import lane becomes the delivery class (src/outbox/classes.ts, as of this migration)
INSERT INTO "new_OutboxMessage" ("attempts", "backfillId", "body", "checkoutToken", "createdAt", "customerId", "deliveredAt", "dueAt", "email", "eventName", "heldReason", "id", "kind", "lastError", "lastStatus", "latencyMs", "lockedBy", "lockedUntil", "orderId", "runAt", "sends", "shopId", "sourceId", "status", "topic", "updatedAt", "deliveryClass") SELECT "attempts", "backfillId", "body", "checkoutToken", "createdAt", "customerId", "deliveredAt", "dueAt", "email", "eventName", "heldReason", "id", "kind", "lastError", "lastStatus", "latencyMs", "lockedBy", "lockedUntil", "orderId", "runAt", "sends", "shopId", "sourceId", "status", "topic", "updatedAt", CASE WHEN "lane" = 1 THEN 3
  WHEN "eventName" IN ('checkout_started', 'checkout_abandoned', 'browse_abandoned', 'cart_abandoned', 'customer_created', 'customer_updated', 'email_subscribed') THEN 1
  WHEN "eventName" IN ('viewed_product', 'added_to_cart', 'product_ordered') THEN 2
  ELSE 0 END FROM "OutboxMessage";
DROP TABLE "OutboxMessage";
ALTER TABLE "new_OutboxMessage" RENAME TO "OutboxMessage";
CREATE INDEX "OutboxMessage_status_shopId_deliveryClass_runAt_id_idx" ON "OutboxMessage"("status", "shopId", "deliveryClass", "runAt", "id");
CREATE INDEX "OutboxMessage_status_runAt_idx" ON "OutboxMessage"("status", "runAt");
CREATE INDEX "OutboxMessage_status_lockedUntil_idx" ON "OutboxMessage"("status", "lockedUntil");
CREATE INDEX "OutboxMessage_shopId_checkoutToken_eventName_idx" ON "OutboxMessage"("shopId", "checkoutToken", "eventName");
CREATE INDEX "OutboxMessage_shopId_email_eventName_idx" ON "OutboxMessage"("shopId", "email", "eventName");
CREATE INDEX "OutboxMessage_shopId_customerId_idx" ON "OutboxMessage"("shopId", "customerId");
CREATE INDEX "OutboxMessage_shopId_orderId_idx" ON "OutboxMessage"("shopId", "orderId");
CREATE INDEX "OutboxMessage_shopId_status_deliveredAt_idx" ON "OutboxMessage"("shopId", "status", "deliveredAt");
CREATE INDEX "OutboxMessage_shopId_id_idx" ON "OutboxMessage"("shopId", "id");
CREATE INDEX "OutboxMessage_backfillId_idx" ON "OutboxMessage"("backfillId");
CREATE UNIQUE INDEX "OutboxMessage_shopId_sourceId_key" ON "OutboxMessage"("shopId", "sourceId");
CREATE TABLE "new_WorkspacePacer" (
    "workspaceId" TEXT NOT NULL PRIMARY KEY,
    "limitPerSec" INTEGER NOT NULL DEFAULT 10,
    "nextSendUs" BIGINT NOT NULL DEFAULT 0,
    "takenBy" TEXT,
    "lastRemaining" INTEGER,
    "usageCritical" REAL NOT NULL DEFAULT 0,
    "usageTriggers" REAL NOT NULL DEFAULT 0,
    "usageBehaviour" REAL NOT NULL DEFAULT 0,
    "usageHistory" REAL NOT NULL DEFAULT 0,
    "takeSecond" BIGINT NOT NULL DEFAULT 0,
    "takesThisSecond" INTEGER NOT NULL DEFAULT 0,
    "takesLastSecond" INTEGER NOT NULL DEFAULT 0,
    "pausedUntil" DATETIME,
    "pauseReason" TEXT,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_WorkspacePacer" ("lastRemaining", "limitPerSec", "nextSendUs", "pauseReason", "pausedUntil", "takenBy", "updatedAt", "workspaceId") SELECT "lastRemaining", "limitPerSec", "nextSendUs", "pauseReason", "pausedUntil", "takenBy", "updatedAt", "workspaceId" FROM "WorkspacePacer";
DROP TABLE "WorkspacePacer";
ALTER TABLE "new_WorkspacePacer" RENAME TO "WorkspacePacer";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "DeliveryUsage_hour_idx" ON "DeliveryUsage"("hour");

