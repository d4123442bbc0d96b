-- SPDX-License-Identifier: MIT
-- Coroutines in the compatibility suite, the same script for Lua 5.4 and
-- LuaJIT: a producer/filter/consumer chain, a thousand coroutines resumed
-- round-robin, deep recursion in a coroutine, and Lua's own "stack
-- overflow" error caught by pcall inside a coroutine.
local function producer(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i) end
  end)
end
local function filter(src, f)
  return coroutine.wrap(function()
    for v in src do if f(v) then coroutine.yield(v * v) end end
  end)
end
local sum = 0
for v in filter(producer(100000), function(x) return x % 3 == 0 end) do sum = sum + v end
print("chain", string.format("%.0f", sum))

local cos, total = {}, 0
for i = 1, 1000 do
  cos[i] = coroutine.create(function(k)
    local acc = 0
    for r = 1, 20 do acc = acc + k * r; k = coroutine.yield(acc) end
    return acc
  end)
end
for r = 1, 21 do
  for i = 1, #cos do
    local co = cos[i]
    if coroutine.status(co) ~= "dead" then
      local ok, v = coroutine.resume(co, i)
      assert(ok, v)
      total = total + v
    end
  end
end
print("round-robin", total)

local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
local co = coroutine.create(function() coroutine.yield(depth(10000)); return depth(15000) end)
print("deep", select(2, coroutine.resume(co)), select(2, coroutine.resume(co)))

local function forever(n) return 1 + forever(n + 1) end
co = coroutine.wrap(function()
  local ok, err = pcall(forever, 0)
  return ok, (tostring(err):gsub("^.-:%d+: ", ""))
end)
print("overflow", co())
os.exit(3)
