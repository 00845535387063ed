// ml_k_add_sse2 in assembly: the sample of the ML_ASM mechanism (kernels/x86/sse2/asm.cmake lists
// the kernels built from .S files; CMake then compiles this instead of the C++ one in
// f32x4.cc). Same symbol, same C ABI (System V AMD64): y += x elementwise, bit-identical to
// kernels/scalar/elementwise.cc (one IEEE add per element); tested by verify/kernel_checks.cc.
//
//   void ml_k_add_sse2(float *y /* rdi */, const float *x /* rsi */, int n /* edx */);
// Defines: ml_k_add_sse2 (with -DML_ASM=ON)

        .text
        .globl  ml_k_add_sse2
        .type   ml_k_add_sse2, @function
ml_k_add_sse2:
        movslq  %edx, %rdx              // n (sign-extended; n <= 0 does nothing)
        xorl    %eax, %eax              // i = 0
        leaq    -4(%rdx), %rcx          // last i for a whole vector
.Lvec:
        cmpq    %rcx, %rax
        jg      .Ltail
        movups  (%rdi,%rax,4), %xmm0
        movups  (%rsi,%rax,4), %xmm1
        addps   %xmm1, %xmm0
        movups  %xmm0, (%rdi,%rax,4)
        addq    $4, %rax
        jmp     .Lvec
.Ltail:
        cmpq    %rdx, %rax
        jge     .Ldone
        movss   (%rdi,%rax,4), %xmm0
        addss   (%rsi,%rax,4), %xmm0
        movss   %xmm0, (%rdi,%rax,4)
        incq    %rax
        jmp     .Ltail
.Ldone:
        ret
        .size   ml_k_add_sse2, .-ml_k_add_sse2
        .section .note.GNU-stack,"",@progbits
