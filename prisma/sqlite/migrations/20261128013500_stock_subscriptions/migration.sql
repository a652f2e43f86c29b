-- CreateTable
CREATE TABLE "StockSubscription" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "variantId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "customerId" TEXT,
    "source" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "renewedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "notifiedAt" DATETIME,
    CONSTRAINT "StockSubscription_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "StockSubscription_shopId_email_idx" ON "StockSubscription"("shopId", "email");

-- CreateIndex
CREATE INDEX "StockSubscription_shopId_customerId_idx" ON "StockSubscription"("shopId", "customerId");

-- CreateIndex
CREATE INDEX "StockSubscription_expiresAt_idx" ON "StockSubscription"("expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "StockSubscription_shopId_variantId_email_key" ON "StockSubscription"("shopId", "variantId", "email");

