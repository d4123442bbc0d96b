%% SPDX-License-Identifier: MIT
%% Erlang in the compatibility suite, for erl -eval: 10,000 processes in a
%% ring passing a token twice, and a body-recursive function 100,000 deep
%% (on the process heap).
Ring = fun(N, Laps) ->
    Main = self(),
    Node = fun Node(Next, I) -> receive {tok, A} -> Next ! {tok, A + I}, Node(Next, I); stop -> Next ! stop end end,
    First = lists:foldl(fun(I, Next) -> spawn(fun() -> Node(Next, I) end) end, Main, lists:seq(1, N)),
    Lap = fun(A) -> First ! {tok, A}, receive {tok, B} -> B end end,
    R = lists:foldl(fun(_, A) -> Lap(A) end, 0, lists:seq(1, Laps)),
    First ! stop,
    receive stop -> R end
end,
io:format("ring ~p~n", [Ring(10000, 2)]),
Deep = fun D(0) -> 0; D(K) -> 1 + D(K - 1) end,
io:format("deep ~p~n", [Deep(100000)]),
halt(3).
