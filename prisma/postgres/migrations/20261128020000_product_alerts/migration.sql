-- CreateTable
CREATE TABLE "ProductInterest" (
    "shopId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "variantId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "viewedAt" TIMESTAMP(3),
    "cartedAt" TIMESTAMP(3),
    "soldOutAt" TIMESTAMP(3),
    "boughtAt" TIMESTAMP(3),
    "restockSentAt" TIMESTAMP(3),
    "dropSentAt" TIMESTAMP(3),
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ProductInterest_pkey" PRIMARY KEY ("shopId","email","variantId")
);

-- CreateTable
CREATE TABLE "ProductSignal" (
    "id" SERIAL NOT NULL,
    "shopId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "sourceId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "variantId" TEXT NOT NULL,
    "price" DOUBLE PRECISION,
    "previousPrice" DOUBLE PRECISION,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "note" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "queued" INTEGER NOT NULL DEFAULT 0,
    "runAt" TIMESTAMP(3) NOT NULL,
    "lockedBy" TEXT,
    "lockedUntil" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ProductSignal_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ProductInterest_shopId_variantId_idx" ON "ProductInterest"("shopId", "variantId");

-- CreateIndex
CREATE INDEX "ProductInterest_expiresAt_idx" ON "ProductInterest"("expiresAt");

-- CreateIndex
CREATE INDEX "ProductSignal_state_runAt_idx" ON "ProductSignal"("state", "runAt");

-- CreateIndex
CREATE UNIQUE INDEX "ProductSignal_shopId_sourceId_key" ON "ProductSignal"("shopId", "sourceId");

-- AddForeignKey
ALTER TABLE "ProductInterest" ADD CONSTRAINT "ProductInterest_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProductSignal" ADD CONSTRAINT "ProductSignal_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

