-- DropIndex
DROP INDEX "OutboxMessage_shopId_email_idx";

-- DropIndex
DROP INDEX "OutboxMessage_shopId_checkoutToken_idx";

-- DropIndex
DROP INDEX "OutboxMessage_status_shopId_lane_runAt_idx";

-- CreateIndex
CREATE INDEX "OutboxMessage_status_shopId_lane_runAt_id_idx" ON "OutboxMessage"("status", "shopId", "lane", "runAt", "id");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_checkoutToken_eventName_idx" ON "OutboxMessage"("shopId", "checkoutToken", "eventName");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_email_eventName_idx" ON "OutboxMessage"("shopId", "email", "eventName");

