-- CreateTable
CREATE TABLE "ProductInterest" (
    "shopId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "variantId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "viewedAt" DATETIME,
    "cartedAt" DATETIME,
    "soldOutAt" DATETIME,
    "boughtAt" DATETIME,
    "restockSentAt" DATETIME,
    "dropSentAt" DATETIME,
    "expiresAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "email", "variantId"),
    CONSTRAINT "ProductInterest_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "ProductSignal" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "sourceId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "variantId" TEXT NOT NULL,
    "price" REAL,
    "previousPrice" REAL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "note" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "queued" INTEGER NOT NULL DEFAULT 0,
    "runAt" DATETIME NOT NULL,
    "lockedBy" TEXT,
    "lockedUntil" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "ProductSignal_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "ProductInterest_shopId_variantId_idx" ON "ProductInterest"("shopId", "variantId");

-- CreateIndex
CREATE INDEX "ProductInterest_expiresAt_idx" ON "ProductInterest"("expiresAt");

-- CreateIndex
CREATE INDEX "ProductSignal_state_runAt_idx" ON "ProductSignal"("state", "runAt");

-- CreateIndex
CREATE UNIQUE INDEX "ProductSignal_shopId_sourceId_key" ON "ProductSignal"("shopId", "sourceId");

